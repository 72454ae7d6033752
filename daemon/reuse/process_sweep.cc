#include "reuse/process_sweep.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <unordered_set>

#include "agentd/trees/unique_fd.h"
#include "proc/process_tree.h"
#include "sys/awaitable.h"

namespace agentd {
namespace {

using SteadyClock = std::chrono::steady_clock;

std::vector<ProcessEntry> Beneath(const std::vector<pid_t>& spared) {
  return DescendantsOf(::getpid(), spared, ListProcesses());
}

// pidfd_open(2) and pidfd_send_signal(2) (Linux 5.3 and 5.1); -1 where the
// kernel has neither, and the sweep falls back to kill(2) and a pause.
int PidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }
int PidfdKill(int pidfd) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0));
}

// Waits until `pending` pidfds registered in `epoll` have become readable
// (their processes exited) or `deadline` passed. One readiness wait for
// all of them: no fixed pauses, and no walk of /proc while they die.
// False when it could not wait at all.
asio::awaitable<bool> WaitExited(int epoll, size_t pending, SteadyClock::time_point deadline) {
  int watched = ::fcntl(epoll, F_DUPFD_CLOEXEC, 0);  // the descriptor below owns its copy
  if (watched < 0) co_return false;
  auto executor = co_await asio::this_coro::executor;
  asio::posix::stream_descriptor ready(executor, watched);
  asio::steady_timer timer(executor);
  timer.expires_at(deadline);
  // The handler touches `ready` only when the deadline passed while the
  // wait below was still pending (cancelling the timer makes ec nonzero).
  timer.async_wait([&ready](const asio::error_code& ec) {
    if (!ec) ready.cancel();
  });
  epoll_event events[64];
  while (pending > 0) {
    int n = ::epoll_wait(epoll, events, 64, 0);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      // Exited: level-triggered readiness would report it forever.
      ::epoll_ctl(epoll, EPOLL_CTL_DEL, events[i].data.fd, nullptr);
      --pending;
    }
    if (pending == 0 || n > 0) continue;
    auto [ec] = co_await ready.async_wait(asio::posix::stream_descriptor::wait_read, kUseNothrow);
    if (ec) break;  // the deadline
  }
  timer.cancel();
  co_return true;
}

}  // namespace

std::vector<ResetRemaining> ProcessesLeft(const std::vector<pid_t>& spared) {
  std::vector<ResetRemaining> out;
  for (const ProcessEntry& p : Beneath(spared)) {
    out.push_back({"process", "pid " + std::to_string(p.pid) + " (" + p.comm + ")",
                   std::string("still present after SIGKILL (state ") + p.state + ")"});
  }
  return out;
}

asio::awaitable<SweepResult> SweepProcesses(Reaper& reaper, const std::vector<pid_t>& spared,
                                            std::chrono::milliseconds limit) {
  auto deadline = SteadyClock::now() + limit;
  asio::steady_timer pause(co_await asio::this_coro::executor);
  std::unordered_set<pid_t> killed;
  for (;;) {
    reaper.ReapAll();  // our own dead children, so they leave /proc
    std::vector<ProcessEntry> left = Beneath(spared);
    if (left.empty() || SteadyClock::now() >= deadline) break;
    // Each process is signalled through a pidfd (so a pid reused after the
    // walk is not what gets the signal once the pidfd is open) and the
    // pidfd waited on: a round lasts as long as its processes take to die.
    UniqueFd epoll(::epoll_create1(EPOLL_CLOEXEC));
    std::vector<UniqueFd> pidfds;
    size_t unwatched = 0;
    for (const ProcessEntry& p : left) {
      if (p.state == 'Z') continue;  // dead already; its parent or we reap it
      UniqueFd pidfd(PidfdOpen(p.pid));
      int sent = pidfd ? PidfdKill(pidfd.get()) : ::kill(p.pid, SIGKILL);
      if (sent != 0) continue;
      killed.insert(p.pid);
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = pidfd.get();
      if (pidfd && epoll && ::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, pidfd.get(), &ev) == 0) {
        pidfds.push_back(std::move(pidfd));
      } else {
        ++unwatched;
      }
    }
    bool waited = false;
    if (!pidfds.empty()) {
      waited = co_await WaitExited(epoll.get(), pidfds.size(), deadline);
    }
    if (waited && unwatched == 0) continue;
    // Zombies only (a dying parent hands them to us, and SIGCHLD reaps
    // them), or a kernel without pidfds: a short pause before the next walk.
    pause.expires_after(std::chrono::milliseconds(1));
    co_await pause.async_wait(kUseNothrow);
  }
  SweepResult result;
  result.killed = static_cast<int64_t>(killed.size());
  co_return result;
}

}  // namespace agentd
