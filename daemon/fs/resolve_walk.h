// The resolution walk: the stand-in for openat2 on kernels without it, and
// the engine of realpath. One O_PATH | O_NOFOLLOW open per component from
// the root descriptor; a symlink is read and its target spliced into the
// components still to walk, under the same rules as openat2's RESOLVE_
// flags (see fs/confined_root.h): with `beneath`, ".." at the root and
// absolute targets fail with EXDEV; otherwise they stay at the root. A
// symlink found in procfs is followed only when its target is a plain
// relative name (as "self" -> "123"); magic links fail with ELOOP. More than
// 40 symlinks: ELOOP. Thread-safe (no shared state).
#pragma once

#include <string>
#include <vector>

#include "agentd/trees/unique_fd.h"

namespace agentd {

struct WalkResult {
  int error = 0;  // an errno, or 0
  // The directory holding the final component (O_PATH), its name, and the
  // final component itself (O_PATH | O_NOFOLLOW; invalid when it does not
  // exist and a missing leaf was allowed).
  UniqueFd parent;
  std::string leaf;
  UniqueFd leaf_fd;
  // Every component from the root to the final one, symlinks resolved.
  std::vector<std::string> canonical;
};

// Walks `parts` from `root_fd`. `follow_final`: a symlink as the final
// component is followed. `allow_missing_leaf`: a missing final component
// is not an error (leaf_fd stays invalid).
WalkResult ResolveWalk(int root_fd, const std::vector<std::string>& parts, bool beneath,
                       bool follow_final, bool allow_missing_leaf);

}  // namespace agentd
