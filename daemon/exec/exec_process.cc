// The life of one exec's process: spawn, output pumps, exit, output drain,
// timeout and kill escalation (docs/PROTOCOL.md, "Exec").
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "agentd/trees/posix_error.h"
#include "exec/exec_engine.h"
#include "exec/exec_stdin.h"
#include "log/log.h"
#include "metrics/daemon_metrics.h"
#include "proc/child_env.h"
#include "proc/spawn.h"
#include "proc/wait_status.h"
#include "sys/awaitable.h"
#include "sys/pipe.h"
#include "sys/pty.h"

extern char** environ;

namespace agentd {
namespace {

using SteadyClock = std::chrono::steady_clock;
using SystemClock = std::chrono::system_clock;

// Kernel buffer of each output pipe: large enough that a fast writer and
// the pump exchange big batches, small enough for thousands of execs.
constexpr int kOutputPipeBytes = 256 * 1024;
// The buffer of a pipe whose writer outran the pump (one turn moved a whole
// kOutputPipeBytes): four times fewer wake-ups of the pump and of the
// writer per byte (issue 27, docs/BENCHMARKS.md "Raw output: the pipe and
// the chunk framing"). Only such streams pay it, and a pipe takes its
// pages only as they fill.
constexpr int kFastOutputPipeBytes = 1 << 20;
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

// The descriptors of one child: its 0, 1 and 2 (owned by child_ends until
// the spawn), and the daemon's ends: output sources and the input sink.
struct ChildIo {
  std::vector<UniqueFd> child_ends;
  int child_in = -1;
  int child_out = -1;
  int child_err = -1;
  UniqueFd read_out;
  UniqueFd read_err;  // none for a PTY: one merged stream
  UniqueFd write_in;  // none when the child reads /dev/null
};

Result<ChildIo> PreparePtyIo(const PtySpec& spec) {
  Result<PtyPair> pty = OpenPty(static_cast<int>(spec.rows), static_cast<int>(spec.cols));
  if (!pty.ok()) return pty.status();
  // Input is written to the master through its own descriptor, so closing
  // it (eof) leaves the output side open.
  UniqueFd input(::fcntl(pty->master.get(), F_DUPFD_CLOEXEC, 3));
  if (!input) return PosixError(errno, "cannot duplicate the PTY master");
  ChildIo io;
  io.child_in = io.child_out = io.child_err = pty->slave.get();
  io.child_ends.push_back(std::move(pty->slave));
  io.read_out = std::move(pty->master);
  io.write_in = std::move(input);
  return io;
}

Result<ChildIo> PrepareIo(const ExecStartRequest& request) {
  if (request.pty) return PreparePtyIo(*request.pty);
  Result<Pipe> out = MakePipe(true, false, kOutputPipeBytes);
  if (!out.ok()) return out.status();
  Result<Pipe> err = MakePipe(true, false, kOutputPipeBytes);
  if (!err.ok()) return err.status();
  ChildIo io;
  io.child_out = out->write.get();
  io.child_err = err->write.get();
  io.child_ends.push_back(std::move(out->write));
  io.child_ends.push_back(std::move(err->write));
  io.read_out = std::move(out->read);
  io.read_err = std::move(err->read);
  if (request.stdin_stream || request.stdin_data) {
    Result<Pipe> in = MakePipe(false, true);
    if (!in.ok()) return in.status();
    io.child_in = in->read.get();
    io.child_ends.push_back(std::move(in->read));
    io.write_in = std::move(in->write);
  } else {
    Result<UniqueFd> null_in = NullInput();
    if (!null_in.ok()) return null_in.status();
    io.child_in = null_in->get();
    io.child_ends.push_back(std::move(*null_in));
  }
  return io;
}

bool FindRequestEnv(const EnvOverlay& env, std::string_view name) {
  for (const auto& [k, v] : env) {
    if (k == name) return true;
  }
  return false;
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
  rec->launching = false;
  rec->pty_master.reset();
  rec->egress_guard.reset();
  if (rec->egress) {  // nothing ran, so nothing was sent: a fact to keep
    EgressReport none;
    none.accounting = true;
    none.max_destinations = kMaxEgressDestinations;
    rec->egress_final = std::move(none);
  }
  ReleaseGroup(rec);
  CountExit(*rec, /*spawn_failed=*/true);
}

void ExecEngine::Launch(const SharedRecord& rec, Prepared& prepared) {
  rec->started_at = SystemClock::now();
  rec->started_steady = SteadyClock::now();
  // Under cgroup v2 the exec's one group is also where its egress programs
  // go (a process is in one cgroup2 group only).
  bool v2_egress = rec->egress && limiter_.mechanism() == LimitMechanism::kCgroup2;
  if (limiter_.NeedsGroup(rec->limits) || v2_egress) {
    rec->launching = true;
    auto held = std::make_shared<Prepared>(std::move(prepared));
    asio::co_spawn(io_, LaunchInGroup(rec, std::move(held)), asio::detached);
    return;
  }
  SpawnProcess(rec, prepared);
}

asio::awaitable<void> ExecEngine::LaunchInGroup(SharedRecord rec,
                                                std::shared_ptr<Prepared> prepared) {
  const Limiter* limiter = &limiter_;
  auto make = [limiter, seq = rec->seq, limits = rec->limits, parent = tenant_cgroup_.dir()]() {
    return limiter->CreateGroup(seq, limits, parent);
  };
  Result<std::unique_ptr<ExecGroup>> group = co_await RunBlocking(blocking_, std::move(make));
  rec->launching = false;
  if (group.ok()) rec->group = std::move(*group);
  if (stopping_) {
    FailLaunch(rec, "the daemon is shutting down", 126);
  } else if (!group.ok()) {
    FailLaunch(rec, "cannot set up the exec's limits: " + group.status().message(), 126);
  } else {
    SpawnProcess(rec, *prepared);
  }
  Persist(*rec);
  rec->changed.Notify();
  NoteSettled();
}

void ExecEngine::SpawnProcess(const SharedRecord& rec, Prepared& prepared) {
  ExecStartRequest& request = prepared.request;
  const std::optional<Credentials>& identity = prepared.identity;
  auto launch_began = rec->started_steady;
  rec->started_at = SystemClock::now();
  rec->started_steady = SteadyClock::now();
  rec->pty = request.pty.has_value();
  rec->stdin_stream = request.stdin_stream || rec->pty;
  const Credentials* creds = identity ? &*identity : nullptr;
  std::vector<std::string> env = std::move(prepared.env);  // built once, by Prepare()
  if (request.pty && !FindRequestEnv(request.env, "TERM")) {
    SetEnv(env, "TERM", request.pty->term.value_or(kDefaultTerm));
  }
  Result<ChildIo> io = PrepareIo(request);
  if (!io.ok()) return FailLaunch(rec, io.status().message(), 126);

  SpawnSpec spec;
  spec.argv = prepared.argv ? *prepared.argv : request.EffectiveArgv();
  spec.fd3 = prepared.fd3;
  spec.env = std::move(env);
  spec.cwd = request.cwd;
  spec.credentials = creds;
  spec.stdin_fd = io->child_in;
  spec.stdout_fd = io->child_out;
  spec.stderr_fd = io->child_err;
  spec.controlling_terminal = rec->pty;
  spec.nofile = child_nofile_;
  if (rec->group) {
    for (const UniqueFd& fd : rec->group->procs_fds()) spec.cgroup_procs_fds.push_back(fd.get());
  }
  for (const ChildRlimit& r : limiter_.Rlimits(rec->limits)) {
    spec.rlimits.emplace_back(r.resource, r.value);
  }
  spec.oom_score_adj = options_.child_oom_score_adj;
  spec.empty_network = rec->network.has_value();
  if (rec->limits.disk_bytes) {
    Result<ScratchDisk> disk = ScratchDisk::Make(*rec->limits.disk_bytes);
    if (!disk.ok()) {
      return FailLaunch(rec, "cannot make the exec's scratch tmpfs: " + disk.status().message(),
                        126);
    }
    rec->scratch = std::move(*disk);
    spec.scratch_path = rec->limits.disk_path.value_or(kDefaultDiskPath);
    spec.scratch_mount_fd = rec->scratch.fd();
  }
  if (rec->egress) {
    Status attached = AttachEgress(rec);
    if (!attached.ok()) {
      return FailLaunch(rec, "cannot apply the egress policy: " + attached.message(), 126);
    }
    if (int fd = rec->egress_guard->procs_fd(); fd >= 0) spec.cgroup_procs_fds.push_back(fd);
    spec.egress_policed = true;
  }
  // Every exec lies in its generation's cgroup2 group, which a reset kills
  // whole: in its leaf, unless the exec's own cgroup2 group (limits,
  // egress) was made inside it (a process is in one cgroup2 group).
  bool own_v2 = (rec->group && limiter_.mechanism() == LimitMechanism::kCgroup2) ||
                (rec->egress_guard && rec->egress_guard->procs_fd() >= 0);
  if (!own_v2 && tenant_cgroup_.leaf_procs_fd() >= 0) {
    spec.cgroup_procs_fds.push_back(tenant_cgroup_.leaf_procs_fd());
  }
  // Without a filter Prepare() refuses a restricted exec unless the
  // operator allowed the weaker profile (--restricted-without-seccomp).
  if (prepared.restricted) {
    spec.restricted = true;
    spec.seccomp_filter = refusal_filter_ ? &refusal_filter_->fprog : nullptr;
    spec.readonly_paths = readonly_paths_;
  }
  // A holder (proc/exec_holder.h) for what a restarted daemon can take
  // back whole: not a run, but a context's interpreter (its channel kept
  // beside its pipes). Streamed stdin (a PTY's too) goes to the holder
  // through a relay pipe, which it passes on; stdin given whole at the
  // start in a memfd, which it passes on alone; a PTY's output comes from
  // the holder through a pipe, which it fills from the master.
  SpawnSpec::Holder holder;
  UniqueFd holder_conn;
  UniqueFd holder_end;
  std::optional<Pipe> relay;
  std::optional<Pipe> pty_out;
  UniqueFd whole_in;
  bool relay_stdin = io->write_in && request.stdin_stream;
  bool context = rec->internal && prepared.channel >= 0;  // never with stdin
  if (!holder_dir_.empty() && (!rec->internal || context)) {
    int sv[2];
    if (relay_stdin || rec->pty) {
      Result<Pipe> made = MakePipe(false, true);
      if (made.ok()) relay = std::move(*made);
    } else if (io->write_in && request.stdin_data) {
      Result<UniqueFd> made = WholeStdinFile(*request.stdin_data);
      if (made.ok()) whole_in = std::move(*made);
    }
    if (rec->pty) {
      Result<Pipe> made = MakePipe(true, true, kOutputPipeBytes);
      if (made.ok()) pty_out = std::move(*made);
    }
    if ((relay || whole_in || !io->write_in) && (pty_out || !rec->pty) &&
        ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
      holder_conn = UniqueFd(sv[0]);
      holder_end = UniqueFd(sv[1]);
      holder.conn = sv[1];
      holder.out = io->read_out.get();
      holder.err = io->read_err.get();
      if (pty_out) {
        holder.pty = io->read_out.get();
        holder.out = pty_out->read.get();
        holder.pty_out = pty_out->write.get();
      }
      if (relay) {
        holder.in = io->write_in.get();
        holder.in_relay = relay->read.get();
        holder.in_keep = relay->write.get();
      } else if (whole_in) {
        holder.in = io->write_in.get();
        holder.in_data = whole_in.get();
        holder.in_size = request.stdin_data->size();
      }
      if (context) holder.channel = prepared.channel;
      holder.socket_dir = holder_dir_;
      spec.holder = &holder;
    }
  }
  Result<SpawnResult> spawned = Spawn(spec);
  holder_end.reset();  // the holder has its own copy
  if (spec.holder && relay) {
    // The holder alone keeps the command's stdin (its 'E' is the eof) and
    // the relay's read end; this daemon writes into the relay.
    io->write_in = std::move(relay->write);
    relay.reset();
  }
  if (spec.holder && whole_in) {
    // The holder alone gives the command its stdin, from its copy of the
    // memfd: nothing of it is left here for a crash to lose.
    io->write_in.reset();
    request.stdin_data.reset();
  }
  whole_in.reset();
  if (spec.holder && pty_out) {
    // This daemon reads the pipe the holder fills; the master it keeps
    // only for resize.
    rec->pty_master = std::move(io->read_out);
    io->read_out = std::move(pty_out->read);
    pty_out.reset();
  }
  metrics::Daemon().spawn_latency.Observe(
      std::chrono::duration<double>(SteadyClock::now() - launch_began).count());
  if (rec->group) rec->group->CloseProcsFds();
  if (rec->egress_guard) rec->egress_guard->CloseProcsFd();
  if (!spawned.ok()) return FailLaunch(rec, spawned.status().message(), 126);
  io->child_ends.clear();  // the child has its own copies now

  rec->pid = spawned->pid;
  if (spawned->error != 0) {
    // The child is already in _exit(): collect it here (or its holder,
    // which collected it and exits with its code), so the start answer
    // itself reports the failure as an exit.
    bool held = spawned->holder_pid > 0;
    int status = WaitForFailedChild(held ? spawned->holder_pid : rec->pid);
    FreeHolderStack(spawned->holder_stack);
    return FailLaunch(rec, spawned->reason, DecodeWaitStatus(status).exit_code);
  }
  if (prepared.restricted) {
    ExecRestriction applied;
    applied.user = creds->user_name;
    applied.uid = *creds->uid;
    applied.gid = creds->gid;
    if (refusal_filter_) {
      applied.seccomp_refused_syscalls = static_cast<int64_t>(refusal_filter_->refused.size());
    } else {
      applied.seccomp = false;
      applied.seccomp_why = restricted_unavailable_;
    }
    applied.readonly_paths = readonly_paths_;
    rec->restriction = std::move(applied);
  } else if (creds && creds->uid ? *creds->uid == 0 : ::geteuid() == 0) {
    privileged_generation_ = true;
  }
  ++running_;
  rec->owns_group = true;
  if (spawned->holder_pid > 0) {
    // The exit comes from the holder's report; its stack goes once it ended.
    reaper_.Watch(spawned->holder_pid,
                  [stack = spawned->holder_stack](int) { FreeHolderStack(stack); });
    WatchHolder(rec, holder_conn.release());
    rec->held_internal = rec->internal;  // a context's interpreter: persisted from now on
    if (spawned->holder_listen_error != 0) {
      Log(LogLevel::kWarn, "exec holder has no socket: a daemon restart cannot take it back",
          json::Object().Set("id", rec->id).Set("errno", spawned->holder_listen_error));
    }
  } else {
    reaper_.Watch(rec->pid, [this, rec](int status) { OnLeaderExit(rec, status); });
  }
  WatchLimits(rec);
  Log(LogLevel::kInfo, "exec started", json::Object().Set("id", rec->id).Set("pid", rec->pid));

  for (Stream s : {Stream::kStdout, Stream::kStderr}) {
    UniqueFd& source = s == Stream::kStdout ? io->read_out : io->read_err;
    if (!source) continue;  // a PTY merges both streams into stdout
    rec->pipes[static_cast<int>(s)] =
        std::make_unique<asio::posix::stream_descriptor>(io_, source.release());
    ++rec->pumps_running;
    asio::co_spawn(io_, Pump(rec, s), asio::detached);
  }
  if (io->write_in) {
    rec->stdin_pipe = std::make_unique<asio::posix::stream_descriptor>(io_, io->write_in.release());
    if (request.stdin_data) {
      asio::co_spawn(io_, WriteWholeStdin(rec, std::move(*request.stdin_data)),
                     [this](std::exception_ptr) { NoteSettled(); });
    }
  } else {
    rec->stdin_closed = true;
  }
  if (rec->timeout_sec) {
    rec->timeout_timer.expires_after(std::chrono::seconds(*rec->timeout_sec));
    rec->timeout_timer.async_wait([this, rec](const asio::error_code& ec) {
      if (!ec) OnTimeout(rec);
    });
  }
}

asio::awaitable<void> ExecEngine::Pump(SharedRecord rec, Stream s) {
  std::unique_ptr<asio::posix::stream_descriptor>& pipe = rec->pipes[static_cast<int>(s)];
  OutputLog& log = rec->log(s);
  bool grown = false;
  for (;;) {
    uint64_t moved = 0;
    bool eof = false;
    bool drained = false;
    while (moved < kPumpTurnBytes) {
      // Until a short read: the wait below reports bytes already waiting.
      OutputLog::Fill f = log.FillFrom(pipe->native_handle(), kPumpTurnBytes - moved, true);
      moved += f.bytes;
      eof = f.eof;
      drained = f.would_block || f.emptied;
      if (eof || drained) break;
    }
    if (!grown && moved >= static_cast<uint64_t>(kOutputPipeBytes)) {
      // A hint: a PTY master or the per-user pipe limit refuses, and the
      // stream goes on with the buffer it has.
      ::fcntl(pipe->native_handle(), F_SETPIPE_SZ, kFastOutputPipeBytes);
      grown = true;
    }
    if (moved > 0) {
      rec->changed.Notify();
      metrics::Daemon().output_bytes.With({std::string(StreamName(s))}).Inc(moved);
      const ExecLimits& l = rec->limits;
      if (l.kill_on_output.value_or(false) && l.output_bytes &&
          log.next() > static_cast<uint64_t>(*l.output_bytes)) {
        HitLimit(rec, OutputHit(*l.output_bytes));
      }
    }
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

void ExecEngine::OnLeaderExit(const SharedRecord& rec, int wait_status,
                              std::optional<SystemClock::time_point> ended) {
  ExitOutcome outcome = DecodeWaitStatus(wait_status);
  CheckLimitsAtExit(rec, outcome.signal, outcome.exit_code);
  rec->exit_code = rec->timed_out ? 124 : outcome.exit_code;
  rec->signal = outcome.signal;
  rec->ended_at = ended.value_or(SystemClock::now());
  rec->duration_ms =
      ended
          ? std::chrono::duration_cast<std::chrono::milliseconds>(*ended - rec->started_at).count()
          : std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() -
                                                                  rec->started_steady)
                .count();
  rec->phase = ExecRecord::Phase::kDraining;
  --running_;
  rec->timeout_timer.cancel();
  CountExit(*rec, /*spawn_failed=*/false);
  Log(LogLevel::kInfo, "exec leader exited",
      json::Object()
          .Set("id", rec->id)
          .Set("exit_code", *rec->exit_code)
          .Set("signal", rec->signal ? json::Value(*rec->signal) : json::Value())
          .Set("duration_ms", rec->duration_ms));
  if (rec->pumps_running == 0) return Finalize(rec);
  Persist(*rec);
  rec->changed.Notify();
  rec->drain_timer.expires_after(options_.output_drain);
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

Status ExecEngine::AttachEgress(const SharedRecord& rec) {
  bool in_group = rec->group && limiter_.mechanism() == LimitMechanism::kCgroup2;
  std::string dir;
  if (in_group) {
    dir = rec->group->dirs().front();
  } else {
    Result<std::string> made = egress_host_.MakeDir(rec->seq, tenant_cgroup_.dir());
    if (!made.ok()) return made.status();
    dir = std::move(*made);
  }
  Result<std::unique_ptr<EgressGuard>> guard = EgressGuard::Attach(
      rec->egress_table, dir, /*own_dir=*/!in_group, /*police_sockets=*/rec->egress->mode != "all",
      egress_host_.NftLevel(dir));
  if (!guard.ok()) {
    if (!in_group) ::rmdir(dir.c_str());
    return guard.status();
  }
  rec->egress_guard = std::move(*guard);
  return Status::Ok();
}

void ExecEngine::ReleaseEgress(const SharedRecord& rec) {
  if (!rec->egress_guard) return;
  EgressReport final_counts;
  rec->egress_guard->Read(final_counts);
  if (rec->egress_taken) {  // a context's: its last run's share is what no run took
    rec->egress_untaken = final_counts;
    MergeEgressReport(final_counts, *rec->egress_taken, kMaxEgressDestinations);
  }
  CountEgress(final_counts);
  rec->egress_final = std::move(final_counts);
  rec->egress_guard.reset();  // before the group's removal, which it may share
}

void ExecEngine::CountEgress(const EgressReport& r) {
  metrics::Family<metrics::Counter>& c = metrics::Daemon().egress_attempts;
  if (r.allowed > 0) c.With({"allowed"}).Inc(static_cast<uint64_t>(r.allowed));
  if (r.refused > 0) c.With({"refused"}).Inc(static_cast<uint64_t>(r.refused));
  if (r.overflow > 0) c.With({"overflow"}).Inc(static_cast<uint64_t>(r.overflow));
}

void ExecEngine::Finalize(const SharedRecord& rec) {
  rec->phase = ExecRecord::Phase::kExited;
  ReleaseEgress(rec);
  ReleaseGroup(rec);
  rec->drain_timer.cancel();
  rec->stdin_pipe.reset();
  rec->stdin_closed = true;
  rec->pty_master.reset();  // the output is complete: no terminal left to resize
  Persist(*rec);
  EndHolder(*rec);
  rec->changed.Notify();
  rec->stdin_idle.Notify();
  NoteSettled();
}

void ExecEngine::OnTimeout(const SharedRecord& rec) {
  if (!rec->running()) return;
  rec->timed_out = true;
  if (!rec->killed_by) {
    rec->killed_by = "timeout";
    rec->limit = TimeoutHit(rec->timeout_sec.value_or(0));
  }
  Log(LogLevel::kInfo, "exec timed out", json::Object().Set("id", rec->id));
  SignalGroup(*rec, SIGTERM);
  ArmGrace(rec, std::chrono::seconds(rec->kill_grace_sec));
}

void ExecEngine::SignalGroup(const ExecRecord& rec, int signo) {
  // The whole process group (pgid == the leader's pid, from setsid).
  if (rec.pid > 0) ::kill(-rec.pid, signo);
  // A process that left the group (setsid) is still in the exec's cgroup.
  if (signo == SIGKILL && rec.group) rec.group->KillAll();
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
