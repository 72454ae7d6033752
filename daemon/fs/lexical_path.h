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

namespace agentd {

// A path below some root, as its components: never empty strings or ".",
// and ".." only where it cannot climb above the root (lexically).
struct RelPath {
  std::vector<std::string> parts;
  // How the client named it (the guest path, or the archive member name),
  // for error details.
  std::string display;

  bool is_root() const { return parts.empty(); }
  // "a/b/c" for the kernel; "." for the root itself.
  std::string Joined() const;
  // The last component ("" for the root).
  const std::string& leaf() const;
  // Everything but the last component.
  RelPath Parent() const;
  RelPath Child(std::string name) const;
  bool has_dotdot() const;
};

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

// An archive member name: relative, and free of NUL and of any ".."
// component (even one that would stay inside, as bsdtar's
// SECURE_NODOTDOT). "./a//b/" is "a/b"; "." and "./" are the root itself.
// Refusals are unsafe_path naming `member` with a `reason`.
Result<RelPath> CheckMemberName(std::string_view name);

}  // namespace agentd
