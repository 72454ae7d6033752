// ExtractTar: PUT /v1/fs/tar (docs/PROTOCOL.md, "Trees"). Reads a tar
// stream from a ByteSource and extracts it into a directory, confined and
// all-or-nothing: every member is checked at its header (name, kind, caps,
// free space) before its data is read, created in a StageTree, and the
// tree is committed only after the whole archive was accepted.
//
// Refusals: absolute names and ".." components, members that would be
// written through a symlink, hard links to anything but an earlier member,
// device nodes, FIFOs and sockets (400 unsafe_path naming the member);
// member count, member size and total size over the caps (413
// archive_too_large naming the cap); declared sizes beyond the free space
// (507 insufficient_storage); malformed or truncated input (400
// invalid_archive). A member named "." (the target itself) is counted and
// otherwise ignored: an upload does not change the target's own mode.
//
// Blocking (it does the disk work); run it on a job thread.
#pragma once

#include <cstdint>
#include <string>

#include "agentd/protocol/fs.h"
#include "agentd/trees/byte_stream.h"
#include "agentd/trees/stage_tree.h"

namespace agentd {

struct TarCaps {
  uint64_t max_entries = 65536;
  uint64_t max_entry_bytes = 8ull << 30;
  uint64_t max_total_bytes = 16ull << 30;
};

struct ExtractOptions {
  TarCaps caps;
  StageOptions stage;
};

// `target` is the directory (a descriptor usable as dirfd); `display` its
// guest path, for errors.
Result<TarUploadResponse> ExtractTar(ByteSource& source, int target, const std::string& display,
                                     const ExtractOptions& opts);

}  // namespace agentd
