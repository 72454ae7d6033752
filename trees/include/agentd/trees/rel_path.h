// Paths below a root as components (RelPath), and the lexical check of an
// archive member's name. Pure string work, no system calls: shared by the
// daemon's path policy (fs/lexical_path.h) and the confined extraction
// (agentd/trees/stage_tree.h), which the daemon and the C++ client both use.
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

// `path` split on '/', without empty and "." components ("a//./b/" is
// {"a", "b"}); ".." components are kept.
std::vector<std::string> PathComponents(std::string_view path);

// An archive member name: relative, and free of NUL and of any ".."
// component (even one that would stay inside, as bsdtar's
// SECURE_NODOTDOT). "./a//b/" is "a/b"; "." and "./" are the root itself.
// Refusals are unsafe_path naming `member` with a `reason`.
Result<RelPath> CheckMemberName(std::string_view name);

}  // namespace agentd
