// CreateTar: GET /v1/fs/tar (docs/PROTOCOL.md, "Trees"). Walks a directory
// through descriptors (O_NOFOLLOW at every step, so a symlink is archived
// as a symlink and never entered) and streams a tar of its contents, names
// relative to it, to a ByteSink.
//
// Archived: directories, regular files, symlinks, with modes (setuid,
// setgid, sticky included), numeric owners, mtimes to the nanosecond, and
// hard links among the archived files. Skipped: device nodes, FIFOs and
// sockets (an upload would refuse them), the daemon's own temporaries
// (".agentd-tmp-*", ".agentd-stage-*") of writes in progress, and the
// contents of pseudo file systems mounted in the tree (procfs, sysfs, ...:
// the mount point is archived as an empty directory). Entries come
// in name order, each directory before its contents. Trees deeper than
// kMaxTreeDepth are refused.
//
// Blocking; run it on a job thread. A failure after the first bytes were
// sent can only be reported by cutting the stream short.
#pragma once

#include <string>

#include "agentd/protocol/status.h"
#include "agentd/trees/byte_stream.h"
#include "fs/tar_writer.h"

namespace agentd {

// `dir` is the directory, open O_RDONLY | O_DIRECTORY; `display` its path.
Status CreateTar(int dir, const std::string& display, TarCompression compression, ByteSink& sink);

}  // namespace agentd
