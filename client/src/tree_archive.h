// Local halves of tree transfer, built on libarchive (the only client files
// that include it). Both block; the client runs them on a worker thread
// joined to the request through a pipe.
//
// WriteTreeTar: a tar (pax) of `local_dir`'s contents, names relative to
// it, with full fidelity: modes, mtimes, symlinks as symlinks, hard links
// as hard links, empty directories. Never follows a symlink.
//
// ExtractTreeTar: extracts a tar from `in_fd` under `local_dir` (created if
// missing) with the daemon's confinement rules: absolute names, `..`
// components, hard links leaving the tree, writes through symlinks, and
// device/FIFO/socket entries are refused (unsafe_path naming the member).
// Entries are staged in a private directory inside `local_dir` and moved
// into place only when the whole archive was accepted, so a refused or
// broken archive leaves `local_dir` as it was.
#pragma once

#include <cstdint>
#include <string>

#include "agentd/client/trees.h"
#include "agentd/protocol/status.h"

namespace agentd::client {

// The unit both halves move through their pipe: libarchive's block size
// and the pipe's capacity (tree_transfer.cc).
inline constexpr int kPipeBlockBytes = 256 * 1024;

Result<TreeStats> WriteTreeTar(const std::string& local_dir, int out_fd,
                               TarCompression compression);
Result<TreeStats> ExtractTreeTar(int in_fd, const std::string& local_dir);

}  // namespace agentd::client
