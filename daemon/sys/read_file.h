// Small whole files: read (configuration such as /etc/passwd, an exec's
// metadata) and replaced atomically (exec metadata, the tombstone list).
// Reads: Errors come from PosixError; a file over `limit` bytes is
// payload_too_large. Any thread.
#pragma once

#include <string>
#include <string_view>

#include "agentd/protocol/status.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {

Result<std::string> ReadFileToString(const std::string& path, size_t limit);

// When ReplaceFile's new contents are flushed to the disk.
enum class SyncMode {
  // fsync, then rename: after a crash `path` holds the old or the new
  // contents, whole.
  kBeforeRename,
  // rename at once and hand the file back for the caller to fsync off its
  // hot path: after a crash the file may be empty or short, and whoever
  // reads it must cope.
  kByCaller,
  // write "<path>.tmp" and stop there: neither flushed nor renamed, so
  // `path` is unchanged until FinishReplace (the flush can then overlap
  // other work; the temporary's creation and write already proved the
  // directory takes it). The temporary is removed by FinishReplace or
  // DiscardStaged.
  kStaged,
};

// The one atomic file write: `data` into "<path>.tmp" (mode 0600), then
// renamed over `path`. The temporary file is removed on any failure.
// Returns the written file, still open with kByCaller and kStaged (closed,
// and the descriptor empty, with kBeforeRename). Any thread.
Result<UniqueFd> ReplaceFile(const std::string& path, std::string_view data, SyncMode sync);

// The rest of a kStaged ReplaceFile: `staged` flushed and closed, then
// "<path>.tmp" renamed over `path`; the temporary is removed on failure.
Status FinishReplace(const std::string& path, UniqueFd staged);

// Removes a kStaged ReplaceFile's temporary that will not be finished.
void DiscardStaged(const std::string& path);

// ReplaceFile with SyncMode::kBeforeRename.
Status WriteFileAtomically(const std::string& path, std::string_view data);

}  // namespace agentd
