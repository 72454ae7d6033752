#include "proc/scratch_mount.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agentd/trees/posix_error.h"
#include "proc/child_side.h"
#include "proc/raw_syscall.h"

namespace agentd {

AGENTD_CHILD_SIDE int MountScratch(const char* path, int mount_fd, bool in_own_namespace) {
  long r = 0;
  if (!in_own_namespace) {
    r = RawSyscall(SYS_unshare, CLONE_NEWNS);
    // A slave: the guest's later mounts still reach the exec, never the reverse.
    if (r == 0) r = RawSyscall(SYS_mount, 0, reinterpret_cast<long>("/"), 0, MS_REC | MS_SLAVE, 0);
  }
  if (r == 0) {
    r = RawSyscall(SYS_move_mount, mount_fd, reinterpret_cast<long>(""), AT_FDCWD,
                   reinterpret_cast<long>(path), MOVE_MOUNT_F_EMPTY_PATH);
  }
  return static_cast<int>(-r);
}

namespace {
AGENTD_CHILD_SIDE int ProbeScratchMount(const void* fd) {
  return MountScratch("/", *static_cast<const int*>(fd), false);
}
}  // namespace

size_t StartScratchMountProbe(ProbeChildren& probes) {
  Result<ScratchDisk> disk = ScratchDisk::Make(65536);
  if (!disk.ok()) {
    return probes.Settled(-1, "cannot make a tmpfs for the exec (" + disk.status().message() +
                                  "): it needs CAP_SYS_ADMIN, a kernel with fsopen (5.2) and a "
                                  "seccomp policy that allows it");
  }
  // The child has its own copy of the descriptor table: the tmpfs may go here.
  return probes.Start(ProbeScratchMount, probes.Keep(disk->fd()));
}

std::string ScratchMountVerdict(const ProbeChildren& probes, size_t i) {
  std::string why;
  int err = probes.Outcome(i, &why);
  if (err <= 0) return err == 0 ? "" : why;
  why = "cannot mount a tmpfs in a mount namespace of the exec's own (" +
        std::string(std::strerror(err)) + ")";
  if (err == EPERM) why += ": it needs CAP_SYS_ADMIN and a seccomp policy that allows mount";
  return why;
}

Result<ScratchDisk> ScratchDisk::Make(int64_t bytes) {
  UniqueFd fs(static_cast<int>(::syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC)));
  if (!fs) return PosixError(errno, "fsopen tmpfs");
  std::string size = std::to_string(bytes);
  if (::syscall(SYS_fsconfig, fs.get(), FSCONFIG_SET_STRING, "size", size.c_str(), 0) != 0 ||
      ::syscall(SYS_fsconfig, fs.get(), FSCONFIG_SET_STRING, "mode", "1777", 0) != 0 ||
      ::syscall(SYS_fsconfig, fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
    return PosixError(errno, "configure the tmpfs");
  }
  UniqueFd mnt(static_cast<int>(
      ::syscall(SYS_fsmount, fs.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)));
  if (!mnt) return PosixError(errno, "fsmount the tmpfs");
  ScratchDisk d;
  d.fd_ = std::move(mnt);
  return d;
}
bool ScratchDisk::Full() const {
  struct statfs st;
  return fd_ && ::fstatfs(fd_.get(), &st) == 0 && st.f_bavail == 0;
}

int64_t ScratchDisk::UsedBytes() const {
  struct statfs st;
  if (!fd_ || ::fstatfs(fd_.get(), &st) != 0) return 0;
  return static_cast<int64_t>((st.f_blocks - st.f_bfree) * st.f_bsize);
}

}  // namespace agentd
