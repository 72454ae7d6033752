#include "proc/empty_network.h"

#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "proc/child_side.h"
#include "proc/raw_syscall.h"

namespace agentd {

AGENTD_CHILD_SIDE int EnterEmptyNetwork() {
  long r = RawSyscall(SYS_unshare, CLONE_NEWNET);
  if (r != 0) return static_cast<int>(-r);
  // A new namespace's loopback is down: without it even 127.0.0.1 fails.
  long fd = RawSyscall(SYS_socket, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return static_cast<int>(-fd);
  struct ifreq ifr = {};
  ifr.ifr_name[0] = 'l';
  ifr.ifr_name[1] = 'o';
  r = RawSyscall(SYS_ioctl, fd, SIOCGIFFLAGS, reinterpret_cast<long>(&ifr));
  if (r == 0) {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
    r = RawSyscall(SYS_ioctl, fd, SIOCSIFFLAGS, reinterpret_cast<long>(&ifr));
  }
  RawSyscall(SYS_close, fd);
  return static_cast<int>(-r);
}

namespace {
AGENTD_CHILD_SIDE int ProbeEmptyNetwork(const void*) { return EnterEmptyNetwork(); }
}  // namespace

size_t StartEmptyNetworkProbe(ProbeChildren& probes) {
  return probes.Start(ProbeEmptyNetwork, nullptr);
}

std::string EmptyNetworkVerdict(const ProbeChildren& probes, size_t i) {
  std::string why;
  int err = probes.Outcome(i, &why);
  if (err <= 0) return err == 0 ? "" : why;
  why = "cannot create a network namespace with loopback (" + std::string(std::strerror(err)) + ")";
  if (err == EPERM) why += ": it needs CAP_SYS_ADMIN and a seccomp policy that allows unshare";
  return why;
}

}  // namespace agentd
