// Upgrade in place (docs/OPERATIONS.md, "Upgrading"): the running execs
// described for the next binary, and brought back by it as running.
//
// The record's meta.json (rewritten here first) carries what recovery
// always reads; the handover entry adds what only a live process has: the
// descriptor numbers of its pipes (inherited across the execve), the time
// left on its timers and its stdin position, and where its cgroup is (the
// directories stay: the PID, and so "agentd-<pid>", does). An egress
// policy needs nothing here either: its programs stay attached to the
// exec's cgroup directory, and meta.json says which directory, so the next
// binary takes the counting over from the kernel (exec_recovery.cc, as
// after a crash), counting on from where it was. Output needs
// nothing: the spool file holds every byte pumped so far, and the pipe
// keeps the rest.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "exec/exec_engine.h"
#include "exec/exec_stdin.h"
#include "exec/group_state.h"
#include "log/log.h"

namespace agentd {
namespace {

using SteadyClock = std::chrono::steady_clock;

int64_t MsLeft(SteadyClock::time_point deadline, SteadyClock::time_point now) {
  return std::max<int64_t>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count());
}

int64_t IntOr(const json::Object& o, std::string_view key, int64_t fallback) {
  const json::Value* v = o.Find(key);
  return v && v->is_int() ? v->as_int() : fallback;
}

// The log's bytes are all in its file (a disk error drops bytes and leaves
// the file shorter than the stream: the next binary would count wrongly).
bool LogIsWhole(const OutputLog& log) {
  if (log.fd() < 0) return log.next() == 0;
  struct stat st;
  return ::fstat(log.fd(), &st) == 0 && static_cast<uint64_t>(st.st_size) == log.next();
}

Status Refuse(const ExecRecord& rec, const std::string& why) {
  return Status::Error(ErrorCode::kExecRunning, "exec \"" + rec.id + "\" " + why)
      .With("id", rec.id);
}

}  // namespace

Result<json::Array> ExecEngine::HandOver(std::vector<int>& fds) {
  auto now = SteadyClock::now();
  json::Array out;
  for (const auto& [id, rec] : table_) {
    if (rec->launching) return Refuse(*rec, "is being launched; retry");
    if (rec->finished()) continue;
    if (rec->internal && !rec->keep_on_upgrade)
      return Refuse(*rec,
                    "is a /v1/run in progress or a context's interpreter with a run in progress; "
                    "retry once it answered");
    if (rec->stdin_pipe && !rec->stdin_stream) {
      // Only without a holder (--exec-holder=off): a holder gives the
      // command its whole stdin itself, and outlives the execve.
      return Refuse(*rec, "is still being given its stdin data (--exec-holder=off); retry");
    }
    for (const auto& log : rec->logs) {
      if (!LogIsWhole(*log)) return Refuse(*rec, "lost output to a disk error");
    }
    json::Object e;
    e.Set("id", id);
    e.Set("phase", rec->running() ? "running" : "draining");
    e.Set("elapsed_ms",
          std::chrono::duration_cast<std::chrono::milliseconds>(now - rec->started_steady).count());
    const char* keys[2] = {"stdout_fd", "stderr_fd"};
    for (int i = 0; i < 2; ++i) {
      if (rec->pipes[i] && rec->pipes[i]->is_open()) {
        fds.push_back(rec->pipes[i]->native_handle());
        e.Set(keys[i], rec->pipes[i]->native_handle());
      }
    }
    if (rec->stdin_pipe && rec->stdin_pipe->is_open()) {
      fds.push_back(rec->stdin_pipe->native_handle());
      e.Set("stdin_fd", rec->stdin_pipe->native_handle());
    }
    if (rec->holder && rec->holder->is_open()) {
      fds.push_back(rec->holder->native_handle());
      e.Set("holder_fd", rec->holder->native_handle());
    }
    if (rec->scratch.valid()) {
      fds.push_back(rec->scratch.fd());
      e.Set("scratch_fd", rec->scratch.fd());
    }
    if (rec->pty_master) {  // under a holder: stdout_fd is the pipe it fills
      fds.push_back(rec->pty_master.get());
      e.Set("pty_fd", rec->pty_master.get());
    }
    if (rec->group) {
      // Its directories stay (same PID, same "agentd-<pid>" parent): the
      // next binary reads the same counters and ends the exec as this one would.
      e.Set("cgroup", EncodeGroupState(rec->group->paths(), rec->seq));
    }
    e.Set("stdin_next", rec->stdin_next);
    e.Set("stdin_stream", rec->stdin_stream);
    e.Set("pty", rec->pty);
    e.Set("owns_group", rec->owns_group);
    e.Set("kill_grace_sec", rec->kill_grace_sec);
    if (rec->running() && rec->timeout_sec && !rec->timed_out) {
      e.Set("timeout_left_ms", MsLeft(rec->timeout_timer.expiry(), now));
    }
    if (rec->grace_deadline) e.Set("grace_left_ms", MsLeft(*rec->grace_deadline, now));
    if (!rec->running()) e.Set("drain_left_ms", MsLeft(rec->drain_timer.expiry(), now));
    if (rec->internal) e.Set("internal", true);  // a context's: never listed as an exec
    // A context's interpreter: what its runs took from the counts so far,
    // merged into its final counts (and metrics) at its end.
    if (rec->egress_taken) e.Set("egress_taken", EncodeEgressReport(*rec->egress_taken));
    Persist(*rec, true);  // meta.json as of now: kill state, exit status, retention
    out.emplace_back(std::move(e));
  }
  return out;
}

std::optional<BusyReason> ExecEngine::UpgradeBlocker() const {
  std::optional<BusyReason> transient;
  for (const auto& [id, rec] : table_) {
    std::string exec = "exec \"" + id + "\" ";
    if (rec->launching) {
      if (!transient) transient = BusyReason{exec + "is being launched", rec->started_steady};
      continue;
    }
    if (rec->finished() || rec->internal) continue;
    for (const auto& log : rec->logs) {
      if (!LogIsWhole(*log)) return BusyReason{exec + "lost output to a disk error", {}, false};
    }
    if (rec->stdin_pipe && !rec->stdin_stream && !transient) {
      transient = BusyReason{exec + "is still being given its stdin data (--exec-holder=off)",
                             rec->started_steady};
    }
  }
  return transient;
}

void ExecEngine::ExpectHandover(json::Array execs, int64_t generation) {
  handed_over_ = std::move(execs);
  generation_ = generation;
}

const json::Object* ExecEngine::HandedOver(const std::string& id) const {
  for (const json::Value& v : handed_over_) {
    if (!v.is_object()) continue;
    const json::Value* e = v.as_object().Find("id");
    if (e && e->is_string() && e->as_string() == id) return &v.as_object();
  }
  return nullptr;
}

void ExecEngine::Attach(const SharedRecord& rec, Stream s, int fd) {
  rec->pipes[static_cast<int>(s)] = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
  ++rec->pumps_running;
  asio::co_spawn(io_, Pump(rec, s), asio::detached);
}

void ExecEngine::Adopt(const SharedRecord& rec, const json::Object& handed) {
  auto now = SteadyClock::now();
  // Inherited without close-on-exec for the one execve: every descriptor
  // the daemon holds closes on the next one again.
  auto take = [&handed](std::string_view key) {
    int fd = static_cast<int>(IntOr(handed, key, -1));
    if (fd >= 0) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
  };
  const json::Value* phase = handed.Find("phase");
  bool running = phase && phase->is_string() && phase->as_string() == "running";
  rec->phase = running ? ExecRecord::Phase::kRunning : ExecRecord::Phase::kDraining;
  rec->started_steady = now - std::chrono::milliseconds(IntOr(handed, "elapsed_ms", 0));
  // Both as meta.json had them (exec_recovery.cc) unless the entry says.
  rec->stdin_next =
      static_cast<uint64_t>(IntOr(handed, "stdin_next", static_cast<int64_t>(rec->stdin_next)));
  const json::Value* flag = handed.Find("stdin_stream");
  if (flag && flag->is_bool()) rec->stdin_stream = flag->as_bool();
  flag = handed.Find("pty");
  rec->pty = flag && flag->is_bool() && flag->as_bool();
  flag = handed.Find("internal");
  if (flag && flag->is_bool() && flag->as_bool()) {
    // A context's interpreter. Under a holder its meta.json stays, for a
    // daemon after a crash to take it back; without one it was only for
    // this recovery: after a crash such a context is gone, and its
    // interpreter's record with it.
    rec->internal = true;
    rec->held_internal = IntOr(handed, "holder_fd", -1) >= 0;
    if (!rec->held_internal) ::unlink((rec->dir + "/meta.json").c_str());
  }
  flag = handed.Find("owns_group");
  rec->owns_group = flag && flag->is_bool() && flag->as_bool();
  rec->kill_grace_sec = IntOr(handed, "kill_grace_sec", kDefaultKillGraceSec);
  if (rec->limits.output_bytes) {
    for (auto& log : rec->logs)
      log->set_stream_cap(static_cast<uint64_t>(*rec->limits.output_bytes));
  }
  if (int fd = take("stdout_fd"); fd >= 0) Attach(rec, Stream::kStdout, fd);
  if (int fd = take("stderr_fd"); fd >= 0) Attach(rec, Stream::kStderr, fd);
  if (int fd = take("stdin_fd"); fd >= 0) {
    rec->stdin_pipe = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
    rec->stdin_closed = false;
  }
  if (int fd = take("pty_fd"); fd >= 0) rec->pty_master = UniqueFd(fd);
  if (int fd = take("scratch_fd"); fd >= 0) rec->scratch = ScratchDisk::Adopt(UniqueFd(fd));
  if (const json::Value* g = handed.Find("cgroup"); g && g->is_object()) {
    const json::Object& o = g->as_object();
    // A group made after this one must not take its name (e<seq>).
    next_seq_ = std::max<uint64_t>(next_seq_, GroupStateSeq(o) + 1);
    AdoptGroup(*rec, o);
  }
  if (const json::Value* taken = handed.Find("egress_taken"); taken && rec->egress_guard) {
    if (Result<EgressReport> r = DecodeEgressReport(*taken); r.ok()) {
      rec->egress_taken = std::move(*r);
    }
  }
  if (rec->egress_guard && rec->egress_guard->own_dir()) {
    // Its own directory "e<seq>" below "agentd-egress-<pid>" stays, like
    // the group's: a later exec must not take that name either.
    const std::string& dir = rec->egress_guard->dir();
    std::string_view name = std::string_view(dir).substr(dir.rfind('/') + 1);
    if (name.size() > 1 && name[0] == 'e') {
      next_seq_ = std::max<uint64_t>(next_seq_, std::strtoull(name.data() + 1, nullptr, 10) + 1);
    }
  }
  WatchLimits(rec);  // its group's counters, its tmpfs (both as the last binary did)
  int holder = take("holder_fd");
  // Under a holder the exit comes from its report (the holder is a child
  // of this pid still, reaped as an orphan once it ended).
  if (holder >= 0) WatchHolder(rec, holder);
  if (running) {
    ++running_;
    if (holder < 0) {
      reaper_.Watch(rec->pid, [this, rec](int status) { OnLeaderExit(rec, status); });
    }
    if (int64_t left = IntOr(handed, "timeout_left_ms", -1); left >= 0) {
      rec->timeout_timer.expires_after(std::chrono::milliseconds(left));
      rec->timeout_timer.async_wait([this, rec](const asio::error_code& ec) {
        if (!ec) OnTimeout(rec);
      });
    }
  } else {
    rec->drain_timer.expires_after(std::chrono::milliseconds(IntOr(handed, "drain_left_ms", 0)));
    rec->drain_timer.async_wait([this, rec](const asio::error_code& ec) {
      if (!ec) ExpireDrain(rec);
    });
    if (rec->pumps_running == 0) Finalize(rec);
  }
  if (int64_t left = IntOr(handed, "grace_left_ms", -1); left >= 0) {
    auto deadline = now + std::chrono::milliseconds(left);
    rec->grace_deadline = deadline;
    rec->grace_timer.expires_at(deadline);
    rec->grace_timer.async_wait([this, rec](const asio::error_code& ec) {
      if (ec) return;
      rec->grace_deadline.reset();
      SignalGroup(*rec, SIGKILL);
    });
  }
  Log(LogLevel::kInfo, "exec handed over",
      json::Object().Set("id", rec->id).Set("pid", rec->pid).Set("running", running));
}

}  // namespace agentd
