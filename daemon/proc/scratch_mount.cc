#include "proc/scratch_mount.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "proc/child_side.h"
#include "proc/probe_child.h"

namespace agentd {

std::string ScratchMountOptions(int64_t bytes) {
  return "size=" + std::to_string(bytes) + ",mode=1777";
}

AGENTD_CHILD_SIDE int MountScratch(const char* path, const char* options, bool in_own_namespace) {
  if (!in_own_namespace) {
    if (::syscall(SYS_unshare, CLONE_NEWNS) != 0) return errno;
    // A slave: the guest's later mounts still reach the exec, never the reverse.
    if (::syscall(SYS_mount, nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) return errno;
  }
  if (::syscall(SYS_mount, "tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, options) != 0) {
    return errno;
  }
  return 0;
}

std::string ProbeScratchMount() {
  std::string why;
  int err = RunInProbeChild(
      [](const void*) { return MountScratch("/", "size=65536,mode=1777", false); }, nullptr, &why);
  if (err <= 0) return err == 0 ? "" : why;
  why = "cannot mount a tmpfs in a mount namespace of the exec's own (" +
        std::string(std::strerror(err)) + ")";
  if (err == EPERM) why += ": it needs CAP_SYS_ADMIN and a seccomp policy that allows mount";
  return why;
}

ScratchDisk ScratchDisk::Open(int pid, const std::string& path) {
  ScratchDisk d;
  std::string through = "/proc/" + std::to_string(pid) + "/root" + path;
  UniqueFd fd(::open(through.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  struct statfs st;
  if (fd && ::fstatfs(fd.get(), &st) == 0 && st.f_type == TMPFS_MAGIC) d.fd_ = std::move(fd);
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
