#include "reuse/cgroup_kill.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <optional>

#include "agentd/trees/unique_fd.h"
#include "limits/cgroup_info.h"
#include "limits/tenant_cgroup.h"
#include "sys/awaitable.h"
#include "sys/read_file.h"

namespace agentd {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr int kSignalRounds = 50;

std::optional<CgroupEvents> ReadEvents(const std::string& dir) {
  Result<std::string> text = ReadFileToString(dir + "/cgroup.events", 4096);
  if (!text.ok()) return std::nullopt;
  return ParseCgroupEvents(*text);
}

bool WriteOne(const std::string& path, const char* value) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  return fd && ::write(fd.get(), value, 1) == 1;
}

int KillEach(const std::string& dir) {
  int signalled = 0;
  for (pid_t pid : TenantCgroup::Members(dir)) {
    if (::kill(pid, SIGKILL) == 0) ++signalled;
  }
  return signalled;
}

// The kernel marks cgroup.events modified at each change of populated or
// frozen: an inotify watch on it wakes the wait, made before the change is
// caused so none is missed.
class EventsWatch {
 public:
  explicit EventsWatch(const std::string& dir) : dir_(dir) {
    fd_ = UniqueFd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (fd_ && ::inotify_add_watch(fd_.get(), (dir + "/cgroup.events").c_str(), IN_MODIFY) < 0) {
      fd_.reset();
    }
  }

  // True once `done` holds (or the group is gone), false at the deadline.
  asio::awaitable<bool> Until(bool (*done)(const CgroupEvents&), SteadyClock::time_point deadline) {
    auto executor = co_await asio::this_coro::executor;
    std::optional<asio::posix::stream_descriptor> ready;
    int watched = fd_ ? ::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0) : -1;  // `ready` owns its copy
    if (watched >= 0) ready.emplace(executor, watched);
    asio::steady_timer timer(executor);
    timer.expires_at(deadline);
    // Touches `ready` only when the deadline passed while a wait was
    // pending (cancelling the timer makes ec nonzero).
    timer.async_wait([&ready](const asio::error_code& ec) {
      if (!ec && ready) ready->cancel();
    });
    asio::steady_timer pause(executor);
    bool reached = false;
    for (;;) {
      std::optional<CgroupEvents> events = ReadEvents(dir_);
      if (!events || done(*events)) {
        reached = true;
        break;
      }
      if (SteadyClock::now() >= deadline) break;
      if (ready) {
        auto [ec] =
            co_await ready->async_wait(asio::posix::stream_descriptor::wait_read, kUseNothrow);
        char drain[4096];
        while (::read(fd_.get(), drain, sizeof(drain)) > 0) {
        }
        // The deadline (one more look, then out), or a wait that failed:
        // pauses from then on.
        if (ec && SteadyClock::now() < deadline) ready.reset();
      } else {
        // No inotify (out of watches): a short pause between reads.
        pause.expires_after(std::chrono::milliseconds(1));
        co_await pause.async_wait(kUseNothrow);
      }
    }
    timer.cancel();
    co_return reached;
  }

 private:
  std::string dir_;
  UniqueFd fd_;
};

std::string Comm(pid_t pid) {
  Result<std::string> c = ReadFileToString("/proc/" + std::to_string(pid) + "/comm", 64);
  std::string out = c.ok() ? *c : "?";
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

asio::awaitable<CgroupKillResult> KillCgroup(const std::string& dir,
                                             SteadyClock::time_point deadline) {
  CgroupKillResult r;
  EventsWatch watch(dir);
  std::optional<CgroupEvents> before = ReadEvents(dir);
  if (!before || !before->populated) {
    r.method = "empty";
    co_return r;
  }
  r.killed = static_cast<int64_t>(TenantCgroup::Members(dir).size());
  if (WriteOne(dir + "/cgroup.kill", "1")) {
    r.method = "cgroup.kill";
  } else if (WriteOne(dir + "/cgroup.freeze", "1")) {
    // Frozen, nothing in the group can fork while its members are listed
    // and signalled; SIGKILL ends a frozen cgroup2 task.
    r.method = "freeze";
    bool (*frozen)(const CgroupEvents&) = [](const CgroupEvents& e) {
      return e.frozen || !e.populated;
    };
    bool settled = co_await watch.Until(frozen, deadline);
    (void)settled;  // not frozen by the deadline: killed all the same
    int signalled = KillEach(dir);
    if (signalled > r.killed) r.killed = signalled;
    (void)WriteOne(dir + "/cgroup.freeze", "0");
  } else {
    r.method = "signal";
    for (int round = 0; round < kSignalRounds && KillEach(dir) > 0; ++round) {
    }
  }
  bool (*empty)(const CgroupEvents&) = [](const CgroupEvents& e) { return !e.populated; };
  bool emptied = co_await watch.Until(empty, deadline);
  if (!emptied) {
    for (pid_t pid : TenantCgroup::Members(dir)) {
      r.remaining.push_back({"process", "pid " + std::to_string(pid) + " (" + Comm(pid) + ")",
                             "still in the generation's cgroup " + dir + " after " + r.method});
    }
    if (r.remaining.empty()) {
      r.remaining.push_back({"process", "cgroup " + dir, "still populated after " + r.method});
    }
  }
  co_return r;
}

}  // namespace agentd
