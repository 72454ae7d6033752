// ConfinedRoot: the kernel-enforced half of path confinement.
//
// Every client path (already checked by PathPolicy) is resolved from one
// root directory descriptor with openat2(2):
//   kBeneath (--fs-root DIR): RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS. No
//     step of the resolution may leave DIR: "..", a symlink whose target is
//     absolute or climbs out, and procfs magic links all fail (EXDEV/ELOOP,
//     which become unsafe_path). Symlinks that stay inside are followed.
//   kInRoot (no --fs-root, the root is "/"): RESOLVE_IN_ROOT |
//     RESOLVE_NO_MAGICLINKS, so absolute symlinks of the guest resolve as
//     they always do; only magic links are refused.
// Where the kernel lacks openat2 (ENOSYS) the same rules are enforced by a
// walk of one O_NOFOLLOW open per component that reads and splices symlinks
// itself (fs/resolve_walk.cc).
//
// What this does NOT guarantee: a path resolved now may name another object
// a moment later (a guest process can rename things); callers therefore
// keep working through the descriptors they got, never through re-resolved
// strings. Bind mounts inside the root are crossed like directories.
//
// Immutable after Open(); safe to use from any thread. Errors are Status
// values built by PosixError naming the RelPath's display path.
#pragma once

#include <sys/types.h>

#include <string>

#include "agentd/protocol/status.h"
#include "agentd/trees/unique_fd.h"
#include "fs/lexical_path.h"

namespace agentd {

class ConfinedRoot {
 public:
  enum class Mode { kBeneath, kInRoot };

  static Result<ConfinedRoot> Open(const std::string& dir, Mode mode);

  // Opens `rel` with `flags` (O_CLOEXEC is added; O_NOFOLLOW makes the last
  // component not followed, as for open(2)). `mode` is for O_CREAT.
  Result<UniqueFd> OpenAt(const RelPath& rel, int flags, mode_t mode = 0) const;
  // An O_PATH descriptor of the directory holding rel's last component,
  // every symlink on the way followed (confined). The caller works on
  // rel.leaf() relative to it, which the kernel never follows unless asked.
  // EINVAL for the root itself and for a last component "..".
  Result<UniqueFd> OpenParent(const RelPath& rel) const;
  // rel with every symlink resolved (confined), as components below the
  // root: realpath(3). With `allow_missing_leaf` the last component (after
  // symlinks) may be missing, as for a file about to be created.
  Result<RelPath> Canonical(const RelPath& rel, bool allow_missing_leaf) const;

  int fd() const { return fd_.get(); }
  Mode mode() const { return mode_; }
  // Tests force the walk that stands in for openat2 on older kernels.
  void set_use_openat2(bool use) { use_openat2_ = use; }
  bool uses_openat2() const { return use_openat2_; }

 private:
  ConfinedRoot(UniqueFd fd, Mode mode, bool use_openat2)
      : fd_(std::move(fd)), mode_(mode), use_openat2_(use_openat2) {}

  UniqueFd fd_;
  Mode mode_;
  bool use_openat2_;
};

// The openat2 resolve flags for `mode`, for callers (tar extraction) that
// add their own, e.g. RESOLVE_NO_SYMLINKS.
uint64_t ResolveFlags(ConfinedRoot::Mode mode);

// openat2(2), retried on EAGAIN; -1 with errno set on failure (ENOSYS
// where the kernel lacks it).
int Openat2(int dirfd, const std::string& path, int flags, mode_t mode, uint64_t resolve);

}  // namespace agentd
