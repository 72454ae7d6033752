// Reading a directory through its descriptor (getdents64), so callers
// never name a directory by a path string that could be swapped.
#pragma once

#include <string>
#include <vector>

#include "agentd/protocol/status.h"

namespace agentd {

struct DirEntry {
  std::string name;
  unsigned char type = 0;  // DT_* from getdents; DT_UNKNOWN on some file systems
};

// Every entry of the directory open as `dir_fd` (O_RDONLY | O_DIRECTORY)
// except "." and "..", sorted by name (byte order). Errors name `display`.
Result<std::vector<DirEntry>> ReadDirEntries(int dir_fd, const std::string& display);

// Trees deeper than this are refused by the tree walks (delete, tar),
// which hold one descriptor per level.
inline constexpr int kMaxTreeDepth = 256;

// Removes `name` in `parent_fd` and, when it is a directory, everything
// below it. Never follows a symlink: a symlink is removed, not entered.
// Returns the number of entries removed. Errors name `display` (the path
// of `name`, extended by the walk).
Result<uint64_t> RemoveTree(int parent_fd, const std::string& name, const std::string& display);

// RemoveTree of `path` (the daemon's own files: exec records, journaled
// temporaries), through a descriptor of its parent directory.
Result<uint64_t> RemoveTreeAtPath(const std::string& path);

}  // namespace agentd
