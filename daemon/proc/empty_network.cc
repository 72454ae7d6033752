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

namespace agentd {

AGENTD_CHILD_SIDE int EnterEmptyNetwork() {
  if (::syscall(SYS_unshare, CLONE_NEWNET) != 0) return errno;
  // A new namespace's loopback is down: without it even 127.0.0.1 fails.
  long fd = ::syscall(SYS_socket, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  struct ifreq ifr = {};
  ifr.ifr_name[0] = 'l';
  ifr.ifr_name[1] = 'o';
  int err = 0;
  if (::syscall(SYS_ioctl, fd, SIOCGIFFLAGS, &ifr) != 0) {
    err = errno;
  } else {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
    if (::syscall(SYS_ioctl, fd, SIOCSIFFLAGS, &ifr) != 0) err = errno;
  }
  ::syscall(SYS_close, fd);
  return err;
}

size_t StartEmptyNetworkProbe(ProbeChildren& probes) {
  return probes.Start([](const void*) { return EnterEmptyNetwork(); }, nullptr);
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
