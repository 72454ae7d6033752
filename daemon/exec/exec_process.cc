// The life of one exec's process: spawn, output pumps, exit, output drain,
// timeout and kill escalation (docs/PROTOCOL.md, "Exec").
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "exec/exec_engine.h"
#include "exec/exec_stdin.h"
#include "log/log.h"
#include "proc/child_env.h"
#include "proc/spawn.h"
#include "proc/wait_status.h"
#include "server/awaitable.h"
#include "sys/pipe.h"

extern char** environ;

namespace agentd {
namespace {

using SteadyClock = std::chrono::steady_clock;
using SystemClock = std::chrono::system_clock;

// Kernel buffer of each output pipe: large enough that a fast writer and
// the pump exchange big batches, small enough for thousands of execs.
constexpr int kOutputPipeBytes = 256 * 1024;
// A pump moves at most this much before letting other work run.
constexpr uint64_t kPumpTurnBytes = 4 << 20;

// The child's stdin when the request gives none: /dev/null, or (in an image
// without /dev) an empty pipe whose writer is already closed.
Result<UniqueFd> NullInput() {
  UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (fd) return AboveStdio(std::move(fd));
  Result<Pipe> p = MakePipe(false, false);
  if (!p.ok()) return p.status();
  return std::move(p->read);
}

// Waits for a child whose spawn failed (it exits at once, so this does not
// block in practice). Done before the reaper's loop can see it.
int WaitForFailedChild(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, __WALL) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

void ExecEngine::FailLaunch(const SharedRecord& rec, const std::string& reason, int exit_code) {
  Log(LogLevel::kInfo, "exec could not start",
      json::Object().Set("id", rec->id).Set("reason", reason));
  rec->error = reason;
  (void)rec->log(Stream::kStderr).Append("agentd: " + reason + "\n");
  rec->exit_code = exit_code;
  rec->ended_at = SystemClock::now();
  rec->duration_ms = 0;
  rec->phase = ExecRecord::Phase::kExited;
  rec->stdin_closed = true;
}

void ExecEngine::Launch(const SharedRecord& rec, ExecStartRequest& request,
                        const std::optional<Credentials>& identity) {
  rec->started_at = SystemClock::now();
  rec->started_steady = SteadyClock::now();
  rec->stdin_stream = request.stdin_stream;
  const Credentials* creds = identity ? &*identity : nullptr;
  std::vector<std::string> env =
      BuildChildEnv(environ, bootstrap_.launch_env(), creds, request.env);

  Result<Pipe> out = MakePipe(true, false, kOutputPipeBytes);
  Result<Pipe> err =
      out.ok() ? MakePipe(true, false, kOutputPipeBytes) : Result<Pipe>(out.status());
  bool wants_stdin = request.stdin_stream || request.stdin_data.has_value();
  Result<Pipe> in = wants_stdin ? MakePipe(false, true) : Result<Pipe>(Pipe{});
  Result<UniqueFd> null_in = wants_stdin ? Result<UniqueFd>(UniqueFd()) : NullInput();
  for (const Status* s : {&out.status(), &err.status(), &in.status(), &null_in.status()}) {
    if (!s->ok()) return FailLaunch(rec, s->message(), 126);
  }

  SpawnSpec spec;
  spec.argv = request.EffectiveArgv();
  spec.env = std::move(env);
  spec.cwd = request.cwd;
  spec.credentials = creds;
  spec.stdin_fd = wants_stdin ? in->read.get() : null_in->get();
  spec.stdout_fd = out->write.get();
  spec.stderr_fd = err->write.get();
  spec.nofile = child_nofile_;
  Result<SpawnResult> spawned = Spawn(spec);
  if (!spawned.ok()) return FailLaunch(rec, spawned.status().message(), 126);

  rec->pid = spawned->pid;
  if (spawned->error != 0) {
    // The child is already in _exit(): collect it here, so the start
    // answer itself reports the failure as an exit.
    return FailLaunch(rec, spawned->reason,
                      DecodeWaitStatus(WaitForFailedChild(rec->pid)).exit_code);
  }
  ++running_;
  reaper_.Watch(rec->pid, [this, rec](int status) { OnLeaderExit(rec, status); });
  Log(LogLevel::kInfo, "exec started", json::Object().Set("id", rec->id).Set("pid", rec->pid));

  rec->pipes[0] = std::make_unique<asio::posix::stream_descriptor>(io_, out->read.release());
  rec->pipes[1] = std::make_unique<asio::posix::stream_descriptor>(io_, err->read.release());
  rec->pumps_running = 2;
  asio::co_spawn(io_, Pump(rec, Stream::kStdout), asio::detached);
  asio::co_spawn(io_, Pump(rec, Stream::kStderr), asio::detached);

  if (wants_stdin) {
    rec->stdin_pipe = std::make_unique<asio::posix::stream_descriptor>(io_, in->write.release());
    if (request.stdin_data) {
      asio::co_spawn(io_, WriteWholeStdin(rec, std::move(*request.stdin_data)), asio::detached);
    }
  } else {
    rec->stdin_closed = true;
  }
  if (request.timeout_sec) {
    rec->timeout_timer.expires_after(std::chrono::seconds(*request.timeout_sec));
    rec->timeout_timer.async_wait([this, rec](const asio::error_code& ec) {
      if (!ec) OnTimeout(rec);
    });
  }
}

asio::awaitable<void> ExecEngine::Pump(SharedRecord rec, Stream s) {
  std::unique_ptr<asio::posix::stream_descriptor>& pipe = rec->pipes[static_cast<int>(s)];
  OutputLog& log = rec->log(s);
  for (;;) {
    uint64_t moved = 0;
    bool eof = false;
    bool drained = false;
    while (moved < kPumpTurnBytes) {
      OutputLog::Fill f = log.FillFrom(pipe->native_handle(), kPumpTurnBytes - moved);
      moved += f.bytes;
      eof = f.eof;
      drained = f.would_block;
      if (eof || drained) break;
    }
    if (moved > 0) rec->changed.Notify();
    if (eof || rec->drain_expired) break;
    if (!drained) {  // a full turn: let connections and other pumps run
      co_await asio::post(io_, asio::use_awaitable);
      continue;
    }
    auto [ec] = co_await pipe->async_wait(asio::posix::stream_descriptor::wait_read, kUseNothrow);
    if (ec) {
      // The drain time is over: keep what the pipe holds now, then stop.
      if (log.FillFrom(pipe->native_handle(), kPumpTurnBytes).bytes > 0) rec->changed.Notify();
      break;
    }
  }
  asio::error_code ignored;
  pipe->close(ignored);
  OnPumpDone(rec);
}

void ExecEngine::OnLeaderExit(const SharedRecord& rec, int wait_status) {
  ExitOutcome outcome = DecodeWaitStatus(wait_status);
  rec->exit_code = rec->timed_out ? 124 : outcome.exit_code;
  rec->signal = outcome.signal;
  rec->ended_at = SystemClock::now();
  rec->duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() -
                                                                           rec->started_steady)
                         .count();
  rec->phase = ExecRecord::Phase::kDraining;
  --running_;
  rec->timeout_timer.cancel();
  Log(LogLevel::kInfo, "exec leader exited",
      json::Object()
          .Set("id", rec->id)
          .Set("exit_code", *rec->exit_code)
          .Set("signal", rec->signal ? json::Value(*rec->signal) : json::Value())
          .Set("duration_ms", rec->duration_ms));
  if (rec->pumps_running == 0) return Finalize(rec);
  Persist(*rec);
  rec->changed.Notify();
  rec->drain_timer.expires_after(config_.output_drain);
  rec->drain_timer.async_wait([this, rec](const asio::error_code& ec) {
    if (!ec) ExpireDrain(rec);
  });
}

void ExecEngine::ExpireDrain(const SharedRecord& rec) {
  rec->drain_expired = true;
  for (auto& pipe : rec->pipes) {
    asio::error_code ignored;
    if (pipe && pipe->is_open()) pipe->cancel(ignored);
  }
}

void ExecEngine::OnPumpDone(const SharedRecord& rec) {
  if (--rec->pumps_running == 0 && rec->phase == ExecRecord::Phase::kDraining) Finalize(rec);
}

void ExecEngine::Finalize(const SharedRecord& rec) {
  rec->phase = ExecRecord::Phase::kExited;
  rec->drain_timer.cancel();
  rec->stdin_pipe.reset();
  rec->stdin_closed = true;
  Persist(*rec);
  rec->changed.Notify();
  rec->stdin_idle.Notify();
}

void ExecEngine::OnTimeout(const SharedRecord& rec) {
  if (!rec->running()) return;
  rec->timed_out = true;
  if (!rec->killed_by) rec->killed_by = "timeout";
  Log(LogLevel::kInfo, "exec timed out", json::Object().Set("id", rec->id));
  SignalGroup(*rec, SIGTERM);
  ArmGrace(rec, std::chrono::seconds(rec->kill_grace_sec));
}

void ExecEngine::SignalGroup(const ExecRecord& rec, int signo) {
  // The whole process group (pgid == the leader's pid, from setsid).
  if (rec.pid > 0) ::kill(-rec.pid, signo);
}

void ExecEngine::ArmGrace(const SharedRecord& rec, std::chrono::seconds grace) {
  auto deadline = SteadyClock::now() + grace;
  if (rec->grace_deadline && *rec->grace_deadline <= deadline) return;  // an earlier one stands
  rec->grace_deadline = deadline;
  rec->grace_timer.expires_at(deadline);
  rec->grace_timer.async_wait([this, rec](const asio::error_code& ec) {
    if (ec) return;
    rec->grace_deadline.reset();
    SignalGroup(*rec, SIGKILL);
  });
}

}  // namespace agentd
