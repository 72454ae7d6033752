// Opening a file for GET /v1/fs/file, and locating a line range in it
// without reading it into memory (docs/PROTOCOL.md, "Files").
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <utility>

#include "agentd/protocol/fs.h"
#include "agentd/trees/unique_fd.h"
#include "fs/confined_root.h"
#include "fs/lexical_path.h"

namespace agentd {

struct ReadableFile {
  UniqueFd fd;
  struct stat st;
  // The size the kernel reports cannot be trusted (procfs, sysfs and the
  // like report 0 or 4096): the content must be read to its end instead of
  // sent by length.
  bool size_unknown = false;
  // On procfs, sysfs and the like: content made up on each read (no ETag).
  bool pseudo = false;
};

// Opens `rel` (symlinks followed, confined) for reading. A directory is
// 400 is_directory; a FIFO, socket or device is 400 unsafe_path (it could
// block or never end).
Result<ReadableFile> OpenForRead(const ConfinedRoot& root, const RelPath& rel);

// The byte span [begin, end) of `range` in the first `size` bytes of `fd`,
// scanned with pread through one bounded buffer.
Result<std::pair<uint64_t, uint64_t>> LocateLines(int fd, uint64_t size, const LineRange& range,
                                                  const std::string& display);

// True for procfs, sysfs and the like: their sizes do not describe their
// content, and walking them is never what a tree transfer means.
bool IsPseudoFileSystem(int fd);

// The read buffer of LocateLines and of the streaming reads.
inline constexpr size_t kReadBlockBytes = 1 << 20;

}  // namespace agentd
