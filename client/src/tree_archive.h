// Local halves of tree transfer, built on libarchive (the only client files
// that include it). Both block; the client runs them on a worker thread,
// joined to an upload's request through a pipe; a download's worker reads
// the body from the socket itself (tree_transfer.cc).
//
// WriteTreeTar: a tar (pax) of `local_dir`'s contents, names relative to
// it, with full fidelity: modes, mtimes, symlinks as symlinks, hard links
// as hard links, empty directories. Never follows a symlink.
//
// ExtractTreeTar: extracts a tar from `in_fd` (or `source`) under `local_dir` (created if
// missing) with the daemon's own extraction (agentd/trees/tar_extract.h),
// so a hostile guest meets the same defenses as a hostile upload: absolute
// names, ".." components, writes through symlinks, hard links to anything
// but an earlier member, device/FIFO/socket entries (unsafe_path naming
// the member); more members, bigger members or deeper paths than `caps`
// allow (archive_too_large naming the cap); declared sizes beyond the
// data (invalid_archive); more than the free space (insufficient_storage).
// Entries are staged in a private directory inside `local_dir` and moved
// into place only when the whole archive was accepted, so a refused or
// broken archive leaves `local_dir` as it was.
#pragma once

#include <cstdint>
#include <string>

#include "agentd/client/trees.h"
#include "agentd/protocol/status.h"
#include "agentd/trees/tar_extract.h"

namespace agentd::client {

// The unit both halves move through their pipe: libarchive's block size
// and the pipe's capacity (tree_transfer.cc).
inline constexpr int kPipeBlockBytes = 256 * 1024;

Result<TreeStats> WriteTreeTar(const std::string& local_dir, int out_fd,
                               TarCompression compression);
// The caps are the daemon's upload defaults (docs/CLIENT.md, "Trees").
Result<TreeStats> ExtractTreeTar(int in_fd, const std::string& local_dir,
                                 const TarCaps& caps = TarCaps{});
Result<TreeStats> ExtractTreeTar(ByteSource& source, const std::string& local_dir,
                                 const TarCaps& caps = TarCaps{});

}  // namespace agentd::client
