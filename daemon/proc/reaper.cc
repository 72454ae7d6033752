#include "proc/reaper.h"

#include <sys/prctl.h>
#include <sys/wait.h>

#include <cerrno>

#include "agentd/trees/posix_error.h"
#include "log/log.h"

namespace agentd {

Reaper::Reaper(asio::io_context& io) : signals_(io) {}

Status Reaper::Start() {
  if (::getpid() != 1 && ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    return PosixError(errno, "cannot become a child subreaper");
  }
  asio::error_code ec;
  signals_.add(SIGCHLD, ec);
  if (ec) return PosixError(ec.value(), "cannot watch SIGCHLD");
  Arm();
  ReapAll();  // children that ended before the handler existed
  return Status::Ok();
}

void Reaper::Stop() {
  stopped_ = true;
  asio::error_code ec;
  signals_.cancel(ec);
}

void Reaper::Arm() {
  signals_.async_wait([this](const asio::error_code& ec, int) {
    if (ec || stopped_) return;
    ReapAll();
    Arm();
  });
}

void Reaper::Watch(pid_t pid, ExitHandler handler) { watched_[pid] = std::move(handler); }

void Reaper::ReapAll() {
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG | __WALL);
    if (pid == 0) return;  // children remain, none has exited
    if (pid < 0) {
      if (errno == EINTR) continue;
      return;  // ECHILD: no children at all
    }
    auto it = watched_.find(pid);
    if (it == watched_.end()) {
      ++orphans_reaped_;
      Log(LogLevel::kDebug, "reaped orphan", json::Object().Set("pid", pid));
      continue;
    }
    ExitHandler handler = std::move(it->second);
    watched_.erase(it);
    handler(status);
  }
}

}  // namespace agentd
