// Execs under a holder (proc/exec_holder.h, docs/OPERATIONS.md "Surviving
// a crash"): their exit comes from the holder's report, not the reaper;
// after a daemon crash the next daemon connects to each holder, takes the
// pipes back and pumps them on from the spool files' real size.
#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>

#include "exec/exec_engine.h"
#include "log/log.h"
#include "proc/exec_holder.h"
#include "sys/awaitable.h"

namespace agentd {
namespace {

using SystemClock = std::chrono::system_clock;
using SteadyClock = std::chrono::steady_clock;

SystemClock::time_point FromUnixMs(int64_t ms) {
  return SystemClock::time_point(std::chrono::milliseconds(ms));
}

}  // namespace

void ExecEngine::WatchHolder(const SharedRecord& rec, int fd) {
  rec->holder = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
  asio::co_spawn(io_, ReadHolder(rec), asio::detached);
}

asio::awaitable<void> ExecEngine::ReadHolder(SharedRecord rec) {
  for (;;) {
    if (!rec->holder || !rec->holder->is_open()) co_return;  // ended by EndHolder()
    HolderReport r;
    auto [ec, n] =
        co_await asio::async_read(*rec->holder, asio::buffer(&r, sizeof(r)), kUseNothrow);
    if (ec || !IsHolderReport(r)) break;
    if (r.exited && rec->running()) OnLeaderExit(rec, r.wait_status, FromUnixMs(r.ended_unix_ms));
  }
  if (!rec->running()) co_return;
  // The holder ended before its command did (killed from outside): the
  // command runs on without a parent that can tell its status.
  Log(LogLevel::kWarn, "exec holder lost", json::Object().Set("id", rec->id));
  rec->error = "the exec's holder process ended while the command ran; its exit status is unknown";
  rec->ended_at = SystemClock::now();
  rec->duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() -
                                                                           rec->started_steady)
                         .count();
  rec->phase = ExecRecord::Phase::kDraining;
  --running_;
  rec->timeout_timer.cancel();
  if (rec->pumps_running == 0) {
    Finalize(rec);
    co_return;
  }
  Persist(*rec);
  rec->changed.Notify();
  rec->drain_timer.expires_after(options_.output_drain);
  rec->drain_timer.async_wait([this, rec](const asio::error_code& e) {
    if (!e) ExpireDrain(rec);
  });
}

void ExecEngine::EndHolder(ExecRecord& rec) {
  if (!rec.holder || !rec.holder->is_open()) return;
  // After the final record was written (Finalize persists first): the
  // holder may now reap the command and go.
  (void)::send(rec.holder->native_handle(), "A", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  asio::error_code ignored;
  rec.holder->close(ignored);
}

std::unique_ptr<ExecEngine::Held> ExecEngine::ConnectHolder(pid_t pid, std::string& why) {
  // Whatever this daemon's --exec-holder: the last one's holders count.
  std::string path = state_dir_ + "/h/" + std::to_string(pid) + ".sock";
  struct sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), std::min(path.size(), sizeof(addr.sun_path) - 1));
  auto held = std::make_unique<Held>();
  held->conn = UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  // A holder answers at once (it polls its socket whenever no daemon is
  // connected); a wedged one must not stall the start for long.
  struct timeval limit = {5, 0};
  ::setsockopt(held->conn.get(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  if (::connect(held->conn.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    why = err == ENOENT ? "it had no holder (--exec-holder=off, or an exec given its whole "
                          "stdin at the start, or a PTY exec, by an agentd from before holders "
                          "kept those)"
                        : "its holder is gone: " + std::string(std::strerror(err));
    if (err == ECONNREFUSED) ::unlink(path.c_str());  // a holder's leftover from an earlier boot
    return nullptr;
  }
  int fds[4];
  if (!ReceiveHolderReport(held->conn.get(), &held->report, &held->in_report, fds)) {
    why = "its holder did not answer";
    return nullptr;
  }
  held->out = UniqueFd(fds[0]);
  (held->report.magic == HolderReport::kMagicPty ? held->pty : held->err) = UniqueFd(fds[1]);
  int want = 2;
  if (held->report.stdin_state == HolderReport::kStdinOpen) held->in = UniqueFd(fds[want++]);
  // A context's channel next, the one socket among pipes; the scratch
  // tmpfs last, the one directory.
  struct stat st;
  if (want < 4 && fds[want] >= 0 && ::fstat(fds[want], &st) == 0 && S_ISSOCK(st.st_mode)) {
    held->channel = UniqueFd(fds[want++]);
  }
  if (want < 4 && fds[want] >= 0 && ::fstat(fds[want], &st) == 0 && S_ISDIR(st.st_mode)) {
    held->scratch = UniqueFd(fds[want++]);
  }
  for (int i = want; i < 4; ++i) {
    if (fds[i] >= 0) ::close(fds[i]);
  }
  if (held->report.pid != pid || held->report.fds != want) {
    why = "its holder did not answer";
    return nullptr;
  }
  return held;
}

UniqueFd ExecEngine::TakeChannel(const ExecView& exec) { return std::move(exec.record()->channel); }

void ExecEngine::EndUnclaimedHolders() {
  std::set<pid_t> claimed;
  for (const auto& [id, rec] : table_) {
    if (rec->holder) claimed.insert(rec->pid);
  }
  DIR* dir = ::opendir((state_dir_ + "/h").c_str());
  if (!dir) return;
  std::vector<pid_t> pids;
  while (struct dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    if (name.size() <= 5 || name.substr(name.size() - 5) != ".sock") continue;
    pid_t pid = static_cast<pid_t>(std::atol(std::string(name.substr(0, name.size() - 5)).c_str()));
    if (pid > 0 && claimed.count(pid) == 0) pids.push_back(pid);
  }
  ::closedir(dir);
  for (pid_t pid : pids) {
    std::string why;
    std::unique_ptr<Held> held = ConnectHolder(pid, why);
    if (!held) continue;
    (void)::send(held->conn.get(), "Q", 1, MSG_NOSIGNAL);
    Log(LogLevel::kInfo, "ended an exec holder no record claims", json::Object().Set("pid", pid));
  }
}

void ExecEngine::AdoptHeld(const SharedRecord& rec, Held& held) {
  auto now = SystemClock::now();
  rec->phase = ExecRecord::Phase::kRunning;
  rec->started_steady = SteadyClock::now() - (now - rec->started_at);
  rec->owns_group = true;
  ++running_;
  if (rec->limits.output_bytes) {
    for (auto& log : rec->logs)
      log->set_stream_cap(static_cast<uint64_t>(*rec->limits.output_bytes));
  }
  // From the spool files' real size (OutputLog::Open): what the old daemon
  // spliced is there, what it did not is still in the pipes.
  Attach(rec, Stream::kStdout, held.out.release());
  if (held.pty) {
    // A PTY exec (not in meta.json): one merged stream, the master kept
    // for resize.
    rec->pty = true;
    rec->pty_master = std::move(held.pty);
  } else {
    Attach(rec, Stream::kStderr, held.err.release());
  }
  if (held.report.stdin_state != HolderReport::kStdinNone) {
    // Streamed stdin, through the holder's relay: the count is every byte
    // the last daemon's writes took, so retries by offset stay exact.
    rec->stdin_stream = true;
    rec->stdin_next = held.in_report.next;
    if (held.in) {
      rec->stdin_pipe = std::make_unique<asio::posix::stream_descriptor>(io_, held.in.release());
      rec->stdin_closed = false;
    }
  }
  WatchHolder(rec, held.conn.release());
  rec->channel = std::move(held.channel);  // for its context (TakeChannel)
  // The tmpfs as the first daemon saw it: a fill while none ran ends the
  // exec at its exit below, a later one at the next poll.
  if (rec->limits.disk_bytes && held.scratch) {
    rec->scratch = ScratchDisk::Adopt(std::move(held.scratch));
  }
  WatchLimits(rec);  // the tmpfs, and the group's counters (Recover() took it over)
  if (held.report.exited) {
    OnLeaderExit(rec, held.report.wait_status, FromUnixMs(held.report.ended_unix_ms));
  } else if (rec->timeout_sec && !rec->timed_out) {
    auto left = rec->started_at + std::chrono::seconds(*rec->timeout_sec) - now;
    rec->timeout_timer.expires_after(std::max(
        std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(left)));
    rec->timeout_timer.async_wait([this, rec](const asio::error_code& ec) {
      if (!ec) OnTimeout(rec);
    });
  }
  Log(LogLevel::kInfo, "exec taken back from its holder",
      json::Object()
          .Set("id", rec->id)
          .Set("pid", rec->pid)
          .Set("exited", held.report.exited != 0)
          .Set("stdin_next", rec->stdin_next)
          .Set("stdout_bytes", rec->logs[0]->next())
          .Set("stderr_bytes", rec->logs[1]->next()));
}

}  // namespace agentd
