// The lexical half of path confinement (docs/PROTOCOL.md, "Files"): pure
// string checks made before any system call, in the manner of libarchive's
// cleanup_pathname. They do NOT guarantee confinement on their own: a
// symlink can still lead anywhere. Kernel-enforced resolution from a root
// descriptor (fs/confined_root.h) is the second, authoritative layer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "agentd/protocol/status.h"
#include "agentd/trees/rel_path.h"

namespace agentd {

// The guest paths a daemon accepts: absolute paths under its root prefix
// ("/" without --fs-root). Immutable; safe to share between threads.
class PathPolicy {
 public:
  // `root` is an absolute path; it is normalized lexically ("/srv//x/" is
  // "/srv/x"). Symlinks in it are not resolved.
  explicit PathPolicy(std::string_view root);

  // The components of `client_path` below the root. Refuses (each naming
  // `path`): empty or relative paths and NUL bytes (invalid_request); a path
  // outside the root or whose ".." climbs above it (unsafe_path).
  Result<RelPath> Check(std::string_view client_path) const;
  // The guest path of `rel` ("/srv/x/a/b"), for answers.
  std::string Display(const RelPath& rel) const;
  const std::string& root() const { return root_; }

 private:
  std::string root_;                     // normalized, "/" or "/a/b"
  std::vector<std::string> root_parts_;  // its components
};

}  // namespace agentd
