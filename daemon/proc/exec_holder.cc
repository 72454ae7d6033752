#include "proc/exec_holder.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include "proc/child_side.h"
#include "proc/raw_syscall.h"

namespace agentd {
namespace {

// Bytes a PTY exec's holder read and has yet to write on (exec_holder.h).
struct Buffer {
  char bytes[4096];
  int at = 0;
  int end = 0;
};

// Stdin passed on by the holder (exec_holder.h): streamed through the
// relay, or whole from the memfd (h.in_data).
struct Relay {
  bool present = false;   // this exec's streamed stdin goes through the holder
  bool eof = false;       // the daemon sent 'E'
  bool wait_out = false;  // the command's pipe is full: wait until it can take more
  uint64_t spliced = 0;   // bytes passed on to the command
  Buffer pending;         // a PTY's: read from the relay, not yet taken by the master
};

AGENTD_CHILD_SIDE int Unread(int pipe) {
  int n = 0;
  return RawSyscall(SYS_ioctl, pipe, FIONREAD, reinterpret_cast<long>(&n)) == 0 ? n : 0;
}

// Taken from a daemon, not yet passed on.
AGENTD_CHILD_SIDE uint64_t Waiting(const HolderFds& h, const Relay& r) {
  if (h.in_data >= 0) return h.in_size - r.spliced;
  return static_cast<uint64_t>(Unread(h.in_relay) + r.pending.end - r.pending.at);
}

// One step from the relay on to the command's stdin: bytes passed on, or
// -errno (-EAGAIN: the relay is empty or the command's side full). A pipe
// is spliced; a terminal goes through the buffer.
AGENTD_CHILD_SIDE long Step(HolderFds& h, Relay& r) {
  if (h.in_data >= 0) {
    // Whole stdin: from the memfd at the holder's own offset; 0 at its end.
    uint64_t left = h.in_size - r.spliced;
    if (left == 0) return 0;
    int64_t at = static_cast<int64_t>(r.spliced);
    return RawSyscall(SYS_splice, h.in_data, reinterpret_cast<long>(&at), h.in, 0,
                      static_cast<long>(left < (1u << 20) ? left : (1u << 20)), SPLICE_F_NONBLOCK);
  }
  if (h.pty < 0) return RawSyscall(SYS_splice, h.in_relay, 0, h.in, 0, 1 << 20, SPLICE_F_NONBLOCK);
  Buffer& b = r.pending;
  if (b.at == b.end) {
    // The relay's read end blocks: read only what is there.
    if (Unread(h.in_relay) == 0) return -EAGAIN;
    long n = RawSyscall(SYS_read, h.in_relay, reinterpret_cast<long>(b.bytes), sizeof(b.bytes));
    if (n <= 0) return n == 0 ? -EPIPE : n;
    b.at = 0;
    b.end = static_cast<int>(n);
  }
  long n = RawSyscall(SYS_write, h.in, reinterpret_cast<long>(b.bytes + b.at), b.end - b.at);
  if (n > 0) b.at += static_cast<int>(n);
  return n;
}

// Moves what the relay (or the whole stdin's memfd) holds on to the
// command's stdin without blocking. Closes both at the end of input, or
// once the command cannot read any more (what the relay still held counts
// as given, as the daemon answered). A PTY's master stays open (h.in is
// its duplicate).
AGENTD_CHILD_SIDE void Pass(HolderFds& h, Relay& r) {
  while (h.in >= 0) {
    long n = Step(h, r);
    if (n > 0) {
      r.spliced += static_cast<uint64_t>(n);
      continue;
    }
    if (n == -EINTR) continue;
    r.wait_out = n == -EAGAIN && Waiting(h, r) > 0;
    if (r.wait_out || (n == -EAGAIN && !r.eof)) return;
    if (n < 0 && n != -EAGAIN && h.in_data < 0) r.spliced += Waiting(h, r);
    r.pending.at = r.pending.end = 0;
    RawSyscall(SYS_close, h.in);
    RawSyscall(SYS_close, h.in_relay);
    RawSyscall(SYS_close, h.in_keep);
    RawSyscall(SYS_close, h.in_data);
    h.in = h.in_relay = h.in_keep = h.in_data = -1;
  }
}

// A PTY's output, from the master on into the pipe the daemon reads,
// without blocking: *wait_pipe when that pipe is full. At the end (every
// slave descriptor closed: EIO) the pipe is closed, the daemon's eof.
AGENTD_CHILD_SIDE void PumpPty(HolderFds& h, Buffer& b, bool* wait_pipe) {
  while (h.pty_out >= 0) {
    if (b.at < b.end) {
      long n =
          RawSyscall(SYS_write, h.pty_out, reinterpret_cast<long>(b.bytes + b.at), b.end - b.at);
      if (n > 0) {
        b.at += static_cast<int>(n);
        continue;
      }
      if (n == -EINTR) continue;
      *wait_pipe = n == -EAGAIN;
      if (*wait_pipe) return;
      b.at = b.end;  // cannot be (the holder keeps the read end): give up the output
    }
    *wait_pipe = false;
    b.at = b.end = 0;
    long n = RawSyscall(SYS_read, h.pty, reinterpret_cast<long>(b.bytes), sizeof(b.bytes));
    if (n > 0) {
      b.end = static_cast<int>(n);
      continue;
    }
    if (n == -EINTR) continue;
    if (n == -EAGAIN) return;
    RawSyscall(SYS_close, h.pty_out);
    h.pty_out = -1;
  }
}

// Sends `r`; on a daemon's connect (`with_fds`) with the kept descriptors
// attached and the stdin count after it.
AGENTD_CHILD_SIDE bool Send(int sock, HolderReport r, const HolderFds& h, const Relay& relay,
                            bool with_fds) {
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(4 * sizeof(int))];
  } control;
  HolderStdin in;
  struct iovec iov[2] = {{&r, sizeof(r)}, {&in, sizeof(in)}};
  struct msghdr msg = {};
  msg.msg_iov = iov;
  msg.msg_iovlen = 1;
  int n = 0;
  int fds[4];
  if (with_fds) {
    if (h.out >= 0) fds[n++] = h.out;
    if (h.pty >= 0) {
      fds[n++] = h.pty;  // in stderr's place (kMagicPty)
    } else if (h.err >= 0) {
      fds[n++] = h.err;
    }
    if (relay.present) {
      r.stdin_state = h.in >= 0 ? HolderReport::kStdinOpen : HolderReport::kStdinClosed;
      if (h.in >= 0) fds[n++] = h.in_keep;
      // No daemon writes now (this one has no write end yet, the last is
      // gone): spliced plus what waits in the relay is every byte taken.
      in.next = relay.spliced + (h.in_relay >= 0 ? Waiting(h, relay) : 0);
      msg.msg_iovlen = 2;
    }
    // A context's interpreter has no stdin: four at most.
    if (h.channel >= 0 && n < 4) fds[n++] = h.channel;
    if (h.scratch >= 0 && n < 4) fds[n++] = h.scratch;
  }
  r.fds = n;
  if (n > 0) {
    msg.msg_control = control.buf;
    msg.msg_controllen = CMSG_SPACE(n * sizeof(int));
    struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(n * sizeof(int));
    int* data = reinterpret_cast<int*>(CMSG_DATA(c));
    for (int i = 0; i < n; ++i) data[i] = fds[i];
  }
  for (;;) {
    long w = RawSyscall(SYS_sendmsg, sock, reinterpret_cast<long>(&msg), MSG_NOSIGNAL);
    if (w == -EINTR) continue;
    return w == static_cast<long>(sizeof(r) + (msg.msg_iovlen == 2 ? sizeof(in) : 0));
  }
}

// Closes every descriptor but the kept ones (a copy of the daemon's table:
// listening sockets, connections, other execs' pipes and write ends).
AGENTD_CHILD_SIDE void CloseAllBut(const int* keep, int n) {
  unsigned next = 0;
  for (int i = 0; i < n; ++i) {  // keep is sorted, -1s first
    if (keep[i] < 0) continue;
    unsigned k = static_cast<unsigned>(keep[i]);
    if (k > next) RawSyscall(SYS_close_range, next, k - 1, 0);
    next = k + 1;
  }
  if (RawSyscall(SYS_close_range, next, ~0U, 0) == -ENOSYS) {
    // Kernels before 5.9: a plain loop, over the gaps only.
    for (unsigned fd = 0; fd < 65536; ++fd) {
      bool kept = false;
      for (int i = 0; i < n; ++i) kept = kept || keep[i] == static_cast<int>(fd);
      if (!kept) RawSyscall(SYS_close, fd);
    }
  }
}

}  // namespace

AGENTD_CHILD_SIDE void HolderWake(int* ready) {
  __atomic_store_n(ready, 1, __ATOMIC_RELEASE);
  RawSyscall(SYS_futex, reinterpret_cast<long>(ready), FUTEX_WAKE, 1);
}

AGENTD_CHILD_SIDE void RunHolder(HolderFds h) {
  constexpr int kKept = 12;
  int keep[kKept] = {h.listen,  h.conn,    h.out, h.err,     h.in,      h.in_relay,
                     h.in_keep, h.scratch, h.pty, h.pty_out, h.in_data, h.channel};
  for (int i = 1; i < kKept; ++i) {  // insertion sort
    for (int j = i; j > 0 && keep[j - 1] > keep[j]; --j) {
      int t = keep[j];
      keep[j] = keep[j - 1];
      keep[j - 1] = t;
    }
  }
  CloseAllBut(keep, kKept);
  Relay relay;
  relay.present = h.in >= 0 && h.in_data < 0;
  if (h.in_data >= 0) Pass(h, relay);  // whole stdin: as much as the pipe takes now
  // Every signal stays blocked (inherited from the spawn); SIGCHLD is
  // read from a signalfd, at its default disposition so the command is
  // not reaped behind the holder's back.
  struct KernelSigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)();
    unsigned long mask;
  } dfl{SIG_DFL, 0, nullptr, 0};
  RawSyscall(SYS_rt_sigaction, SIGCHLD, reinterpret_cast<long>(&dfl), 0, sizeof(dfl.mask));
  unsigned long chld = 1UL << (SIGCHLD - 1);
  int sfd = static_cast<int>(RawSyscall(SYS_signalfd4, -1, reinterpret_cast<long>(&chld),
                                        sizeof(chld), SFD_NONBLOCK | SFD_CLOEXEC));
  Buffer output;  // a PTY's, from the master into the pipe
  bool wait_pipe = false;
  HolderReport report;
  report.magic = h.pty >= 0 ? HolderReport::kMagicPty : HolderReport::kMagic;
  report.pid = h.command;
  for (;;) {
    if (!report.exited) {
      siginfo_t si;
      si.si_pid = 0;
      long w = RawSyscall(SYS_waitid, P_PID, h.command, reinterpret_cast<long>(&si),
                          WEXITED | WNOWAIT | WNOHANG, 0);
      if (w == 0 && si.si_pid == h.command) {
        report.exited = 1;
        report.wait_status = si.si_code == CLD_EXITED
                                 ? (si.si_status & 0xff) << 8
                                 : (si.si_status & 0x7f) | (si.si_code == CLD_DUMPED ? 0x80 : 0);
        struct timespec ts = {};
        RawSyscall(SYS_clock_gettime, CLOCK_REALTIME, reinterpret_cast<long>(&ts));
        report.ended_unix_ms = static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
        if (h.conn >= 0 && !Send(h.conn, report, h, relay, false)) {
          RawSyscall(SYS_close, h.conn);
          h.conn = -1;
        }
      }
    }
    if (h.conn < 0 && h.listen < 0) {
      // Nobody can reach this holder again: nothing left to keep.
      if (report.exited) RawSyscall(SYS_exit_group, 0);
    }
    struct pollfd p[4];
    int n = 0;
    if (!report.exited && sfd >= 0) p[n++] = {sfd, POLLIN, 0};
    if (h.in >= 0) {
      p[n++] = relay.wait_out || h.in_data >= 0 ? pollfd{h.in, POLLOUT, 0}
                                                : pollfd{h.in_relay, POLLIN, 0};
    }
    if (h.pty_out >= 0)
      p[n++] = wait_pipe ? pollfd{h.pty_out, POLLOUT, 0} : pollfd{h.pty, POLLIN, 0};
    if (h.conn >= 0) {
      p[n++] = {h.conn, POLLIN, 0};
    } else if (h.listen >= 0) {
      p[n++] = {h.listen, POLLIN, 0};
    }
    long ready = RawSyscall(SYS_ppoll, reinterpret_cast<long>(p), n, 0, 0, 0);
    if (ready < 0) continue;  // EINTR
    for (int i = 0; i < n; ++i) {
      if (p[i].revents == 0) continue;
      if (p[i].fd == sfd) {
        char drain[sizeof(struct signalfd_siginfo) * 4];
        while (RawSyscall(SYS_read, sfd, reinterpret_cast<long>(drain), sizeof(drain)) > 0) {
        }
      } else if (p[i].fd == h.in || p[i].fd == h.in_relay) {
        Pass(h, relay);
      } else if (p[i].fd == h.pty || p[i].fd == h.pty_out) {
        PumpPty(h, output, &wait_pipe);
      } else if (p[i].fd == h.conn) {
        char b = 0;
        long r = RawSyscall(SYS_read, h.conn, reinterpret_cast<long>(&b), 1);
        if (r == 1 && b == 'E') {  // the end of input, after every byte of it
          relay.eof = true;
          Pass(h, relay);
        }
        if (r == 1 && b == 'Q') {
          // An exec no record knows (the daemon died before writing it).
          RawSyscall(SYS_kill, -h.command, SIGKILL);
          RawSyscall(SYS_kill, h.command, SIGKILL);
          report.exited = 1;
          b = 'A';
        }
        if (r == 1 && b == 'A' && report.exited) {
          // The daemon recorded the exit: reap, tidy up, go.
          siginfo_t si;
          RawSyscall(SYS_waitid, P_PID, h.command, reinterpret_cast<long>(&si), WEXITED, 0);
          if (h.socket_path[0])
            RawSyscall(SYS_unlinkat, AT_FDCWD, reinterpret_cast<long>(h.socket_path));
          RawSyscall(SYS_exit_group, 0);
        }
        if (r == 0 || (r < 0 && r != -EINTR && r != -EAGAIN)) {
          RawSyscall(SYS_close, h.conn);  // that daemon is gone
          h.conn = -1;
        }
      } else if (p[i].fd == h.listen) {
        int c = static_cast<int>(RawSyscall(SYS_accept4, h.listen, 0, 0, SOCK_CLOEXEC));
        if (c < 0) continue;
        if (Send(c, report, h, relay, true)) {
          h.conn = c;
        } else {
          RawSyscall(SYS_close, c);
        }
      }
    }
  }
}

bool ReceiveHolderReport(int sock, HolderReport* report, HolderStdin* in, int fds_out[4]) {
  fds_out[0] = fds_out[1] = fds_out[2] = fds_out[3] = -1;
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(4 * sizeof(int))];
  } control;
  struct iovec iov = {report, sizeof(*report)};
  struct msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.buf;
  msg.msg_controllen = sizeof(control.buf);
  ssize_t n;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
  } while (n < 0 && errno == EINTR);
  int got = 0;
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    int count = static_cast<int>((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    const int* data = reinterpret_cast<const int*>(CMSG_DATA(c));
    for (int i = 0; i < count; ++i) {
      if (got < 4) {
        fds_out[got++] = data[i];
      } else {
        ::close(data[i]);
      }
    }
  }
  bool ok =
      n == static_cast<ssize_t>(sizeof(*report)) && IsHolderReport(*report) && report->fds == got;
  if (ok && report->stdin_state != HolderReport::kStdinNone) {
    do {
      n = ::recv(sock, in, sizeof(*in), MSG_WAITALL);
    } while (n < 0 && errno == EINTR);
    ok = n == static_cast<ssize_t>(sizeof(*in));
  }
  if (!ok) {
    for (int i = 0; i < got; ++i) ::close(fds_out[i]);
    fds_out[0] = fds_out[1] = fds_out[2] = fds_out[3] = -1;
  }
  return ok;
}

}  // namespace agentd
