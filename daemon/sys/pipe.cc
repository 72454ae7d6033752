#include "sys/pipe.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "agentd/trees/posix_error.h"

namespace agentd {

Result<UniqueFd> AboveStdio(UniqueFd fd) {
  if (fd.get() > 2) return fd;
  int moved = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3);
  if (moved < 0) return PosixError(errno, "cannot duplicate a descriptor");
  return UniqueFd(moved);
}

Result<Pipe> MakePipe(bool nonblocking_read, bool nonblocking_write, int capacity) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return PosixError(errno, "cannot create a pipe");
  Result<UniqueFd> r = AboveStdio(UniqueFd(fds[0]));
  Result<UniqueFd> w = AboveStdio(UniqueFd(fds[1]));
  if (!r.ok()) return r.status();
  if (!w.ok()) return w.status();
  Pipe p{std::move(*r), std::move(*w)};
  constexpr int kDefaultMaxCapacity = 1 << 20;
  if (capacity > 0 && ::fcntl(p.read.get(), F_SETPIPE_SZ, capacity) < 0 &&
      capacity > kDefaultMaxCapacity) {
    ::fcntl(p.read.get(), F_SETPIPE_SZ, kDefaultMaxCapacity);  // a hint: failure is fine
  }
  if (nonblocking_read) ::fcntl(p.read.get(), F_SETFL, O_NONBLOCK);
  if (nonblocking_write) ::fcntl(p.write.get(), F_SETFL, O_NONBLOCK);
  return p;
}

}  // namespace agentd
