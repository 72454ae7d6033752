#include "sys/pty.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>

#include <cerrno>
#include <string>

#include "agentd/trees/posix_error.h"
#include "sys/pipe.h"

namespace agentd {

Status ResizePty(int master, int rows, int cols) {
  struct winsize ws {};
  ws.ws_row = static_cast<unsigned short>(rows);
  ws.ws_col = static_cast<unsigned short>(cols);
  if (::ioctl(master, TIOCSWINSZ, &ws) != 0) return PosixError(errno, "cannot resize the PTY");
  return Status::Ok();
}

Result<PtyPair> OpenPty(int rows, int cols) {
  UniqueFd master(::open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK));
  if (!master) return PosixError(errno, "cannot open a pseudo-terminal", "/dev/ptmx");
  int unlock = 0;
  if (::ioctl(master.get(), TIOCSPTLCK, &unlock) != 0) {
    return PosixError(errno, "cannot unlock the pseudo-terminal");
  }
  // The peer by descriptor (no path lookup, right in any mount namespace);
  // kernels before 4.13 lack it: open /dev/pts/N by number instead.
  UniqueFd slave(::ioctl(master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!slave) {
    unsigned int n = 0;
    if (::ioctl(master.get(), TIOCGPTN, &n) != 0) {
      return PosixError(errno, "cannot name the pseudo-terminal");
    }
    std::string path = "/dev/pts/" + std::to_string(n);
    slave.reset(::open(path.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (!slave) return PosixError(errno, "cannot open the pseudo-terminal", path);
  }
  AGENTD_RETURN_IF_ERROR(ResizePty(master.get(), rows, cols));
  Result<UniqueFd> m = AboveStdio(std::move(master));
  if (!m.ok()) return m.status();
  Result<UniqueFd> s = AboveStdio(std::move(slave));
  if (!s.ok()) return s.status();
  return PtyPair{std::move(*m), std::move(*s)};
}

}  // namespace agentd
