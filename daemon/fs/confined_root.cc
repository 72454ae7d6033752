#include "fs/confined_root.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "agentd/trees/posix_error.h"
#include "fs/resolve_walk.h"

namespace agentd {
namespace {

constexpr int kOpenat2Retries = 8;  // EAGAIN: a concurrent rename raced a ".."

bool KernelHasOpenat2() {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  int fd = static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof(how)));
  if (fd >= 0) {
    ::close(fd);
    return true;
  }
  return errno != ENOSYS;
}

}  // namespace

uint64_t ResolveFlags(ConfinedRoot::Mode mode) {
  return RESOLVE_NO_MAGICLINKS |
         (mode == ConfinedRoot::Mode::kBeneath ? RESOLVE_BENEATH : RESOLVE_IN_ROOT);
}

int Openat2(int dirfd, const std::string& path, int flags, mode_t mode, uint64_t resolve) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  // The kernel refuses a mode without O_CREAT or O_TMPFILE.
  if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) how.mode = mode;
  how.resolve = resolve;
  for (int i = 0;; ++i) {
    int fd = static_cast<int>(::syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof(how)));
    if (fd >= 0 || errno != EAGAIN || i == kOpenat2Retries) return fd;
  }
}

Result<ConfinedRoot> ConfinedRoot::Open(const std::string& dir, Mode mode) {
  UniqueFd fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return PosixError(errno, "cannot open the file system root", dir);
  return ConfinedRoot(std::move(fd), mode, KernelHasOpenat2());
}

Result<UniqueFd> ConfinedRoot::OpenAt(const RelPath& rel, int flags, mode_t mode) const {
  if (use_openat2_) {
    int fd = Openat2(fd_.get(), rel.Joined(), flags, mode, ResolveFlags(mode_));
    if (fd < 0) return PosixError(errno, "cannot open", rel.display);
    return UniqueFd(fd);
  }
  bool follow = (flags & O_NOFOLLOW) == 0;
  WalkResult w =
      ResolveWalk(fd_.get(), rel.parts, mode_ == Mode::kBeneath, follow, (flags & O_CREAT) != 0);
  if (w.error) return PosixError(w.error, "cannot open", rel.display);
  if (!w.parent) {  // the root itself
    UniqueFd fd(::openat(fd_.get(), ".", flags | O_CLOEXEC, mode));
    if (!fd) return PosixError(errno, "cannot open", rel.display);
    return fd;
  }
  if ((flags & O_PATH) && w.leaf_fd && !(flags & ~(O_PATH | O_NOFOLLOW | O_CLOEXEC))) {
    return std::move(w.leaf_fd);
  }
  UniqueFd fd(::openat(w.parent.get(), w.leaf.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) return PosixError(errno, "cannot open", rel.display);
  return fd;
}

Result<UniqueFd> ConfinedRoot::OpenParent(const RelPath& rel) const {
  if (rel.is_root() || rel.leaf() == "..") {
    return PosixError(EINVAL, "no parent directory for", rel.display);
  }
  return OpenAt(rel.Parent(), O_PATH | O_DIRECTORY);
}

Result<RelPath> ConfinedRoot::Canonical(const RelPath& rel, bool allow_missing_leaf) const {
  WalkResult w = ResolveWalk(fd_.get(), rel.parts, mode_ == Mode::kBeneath,
                             /*follow_final=*/true, allow_missing_leaf);
  if (w.error) return PosixError(w.error, "cannot resolve", rel.display);
  RelPath out;
  out.parts = std::move(w.canonical);
  out.display = rel.display;
  return out;
}

}  // namespace agentd
