#include "upgrade/upgrader.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "agentd/trees/posix_error.h"
#include "log/log.h"
#include "proc/spawn.h"
#include "proc/wait_status.h"
#include "sys/awaitable.h"
#include "sys/read_file.h"

extern char** environ;

namespace agentd {
namespace {

// The stopped reads' completions were queued when they were stopped, so
// one turn of the io thread runs them; more than this is a bug, and the
// upgrade is refused rather than losing the bytes they read.
constexpr int kSettleTurns = 100;

// The new binary reads a small file and exits: far less than this, unless
// it hangs (then it is killed and the upgrade fails).
constexpr std::chrono::seconds kCheckLimit{30};

std::string DaemonBinary() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string path(buf, static_cast<size_t>(n));
  // The file the daemon started from was replaced on disk: the path now
  // names the new one, which is what an upgrade runs.
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.ends_with(kDeleted)) path.resize(path.size() - kDeleted.size());
  return path;
}

Result<UniqueFd> DupAboveStdio(int fd) {
  UniqueFd out(::fcntl(fd, F_DUPFD_CLOEXEC, 3));
  if (!out) return PosixError(errno, "cannot duplicate a descriptor");
  return out;
}

int64_t MillisSince(std::chrono::steady_clock::time_point then,
                    std::chrono::steady_clock::time_point now) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - then).count();
}

void SetCloexec(const std::vector<int>& fds, bool on) {
  for (int fd : fds) ::fcntl(fd, F_SETFD, on ? FD_CLOEXEC : 0);
}

// Every descriptor above stdio closes on the execve unless handed over:
// some are opened without O_CLOEXEC (Asio's accept(2) of a connection), and
// Spawn() closes those for children, but an execve of the daemon itself
// would carry them into the new binary, which knows nothing of them.
void CloexecAll() {
  if (::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
  DIR* dir = ::opendir("/proc/self/fd");  // kernels before 5.11
  if (!dir) return;
  while (struct dirent* e = ::readdir(dir)) {
    int fd = std::atoi(e->d_name);
    if (fd > 2 && fd != ::dirfd(dir)) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  ::closedir(dir);
}

}  // namespace

std::string PidFilePath(const std::string& dir) { return dir + "/agentd.pid"; }
std::string UpgradeStatusPath(const std::string& dir) { return dir + "/upgrade-status.json"; }
std::string UpgradeStatePath(const std::string& dir) { return dir + "/upgrade.json"; }

Upgrader::Upgrader(asio::io_context& io, Reaper& reaper, std::string state_dir,
                   std::vector<std::string> argv, std::string binary,
                   std::chrono::milliseconds wait, UpgradeSources sources)
    : io_(io),
      reaper_(reaper),
      state_dir_(std::move(state_dir)),
      argv_(std::move(argv)),
      binary_(std::move(binary)),
      wait_(wait),
      sources_(std::move(sources)),
      wake_(io) {
  // Attempts keep counting across restarts, so `agentd --upgrade` waiting
  // for "an attempt after the one I saw" is never fooled by an old file.
  if (Result<std::string> text = ReadFileToString(UpgradeStatusPath(state_dir_), 4096); text.ok()) {
    if (Result<json::Value> doc = json::Parse(*text); doc.ok() && doc->is_object()) {
      if (const json::Value* a = doc->Find("attempt"); a && a->is_int()) attempts_ = a->as_int();
      last_status_ = doc->as_object();
      last_status_.Set("pending", false);  // a pending upgrade ends with its daemon
    }
  }
}

int InitUpgradeSignal() { return SIGRTMIN + 4; }

void Upgrader::WritePidFile(int signal) {
  std::string text =
      std::to_string(::getpid()) + " " + std::to_string(ProcessStartTime(::getpid()).value_or(0));
  if (signal != SIGUSR2) text += " " + std::to_string(signal);
  text += "\n";
  Result<UniqueFd> written = ReplaceFile(PidFilePath(state_dir_), text, SyncMode::kByCaller);
  if (!written.ok()) {
    Log(LogLevel::kWarn, "cannot write the pid file (agentd --upgrade cannot find this daemon)",
        json::Object().Set("error", written.status().message()));
  }
}

void Upgrader::RemovePidFile() { ::unlink(PidFilePath(state_dir_).c_str()); }

void Upgrader::Carry(const HandoverState& state) {
  upgrades_ = state.upgrades;
  failures_ = state.upgrade_failures;
  attempts_ = std::max(attempts_, state.attempt);
}

void Upgrader::Resumed() {
  ::unlink(UpgradeStatePath(state_dir_).c_str());
  Report(attempts_, Status::Ok());
}

void Upgrader::Request() {
  if (running_) {
    Log(LogLevel::kInfo, "upgrade already in progress; request ignored", json::Object());
    return;
  }
  running_ = true;
  pending_attempt_ = ++attempts_;
  pending_since_ = std::chrono::steady_clock::now();
  // Nothing new that would keep the daemon busy starts until the outcome.
  if (wait_.count() > 0) sources_.hold(true);
  if (sources_.handing_over) sources_.handing_over(true);
  asio::co_spawn(io_, Run(pending_attempt_), asio::detached);
}

void Upgrader::Wake() {
  if (waiting_for_) wake_.cancel();
}

json::Object Upgrader::State() const {
  json::Object o;
  o.Set("pending", running_);
  o.Set("wait_limit_ms", static_cast<int64_t>(wait_.count()));
  if (!running_) return o;
  auto now = std::chrono::steady_clock::now();
  o.Set("attempt", pending_attempt_);
  o.Set("pending_ms", MillisSince(pending_since_, now));
  o.Set("waiting_for", waiting_for_ ? waiting_for_->what
                                    : std::string("the new binary's check (--upgrade-check)"));
  if (waiting_for_ && waiting_for_->since) {
    o.Set("in_progress_ms", MillisSince(*waiting_for_->since, now));
  }
  o.Set("held_requests", sources_.held());
  return o;
}

asio::awaitable<Status> Upgrader::AwaitQuiet(int64_t attempt) {
  auto deadline = pending_since_ + wait_;
  for (;;) {
    std::optional<BusyReason> busy = sources_.busy();
    if (!busy) break;
    auto now = std::chrono::steady_clock::now();
    std::string what = busy->what;
    if (busy->since) {
      what += " (in progress for " + std::to_string(MillisSince(*busy->since, now)) + " ms)";
    }
    if (!busy->transient) {
      waiting_for_.reset();
      co_return Status::Error(ErrorCode::kExecRunning, "cannot hand over: " + what);
    }
    if (wait_.count() == 0 || now >= deadline) {
      waiting_for_.reset();
      std::string waited =
          wait_.count() == 0
              ? std::string("--upgrade-wait-ms is 0")
              : "the upgrade waited " + std::to_string(MillisSince(pending_since_, now)) +
                    " ms (--upgrade-wait-ms " + std::to_string(wait_.count()) + ")";
      co_return Status::Error(ErrorCode::kExecRunning, "still in progress: " + what + "; " +
                                                           waited + "; retry once it is over");
    }
    if (!waiting_for_ || waiting_for_->what != busy->what) {
      waiting_for_ = std::move(busy);
      Log(LogLevel::kInfo, "upgrade pending",
          json::Object().Set("attempt", attempt).Set("waiting_for", waiting_for_->what));
      ReportPending(attempt);
    }
    // Woken by Wake() when something may have ended; the deadline bounds it.
    wake_.expires_at(deadline);
    co_await wake_.async_wait(kUseNothrow);
  }
  waiting_for_.reset();
  co_return Status::Ok();
}

asio::awaitable<Status> Upgrader::AwaitReadsSettled() {
  if (!sources_.reads_settled) co_return Status::Ok();
  for (int turn = 0; !sources_.reads_settled(); ++turn) {
    if (turn == kSettleTurns) {
      co_return Status::Internal("cannot hand over: a connection's read did not complete");
    }
    co_await asio::post(io_, asio::use_awaitable);
  }
  co_return Status::Ok();
}

asio::awaitable<void> Upgrader::Run(int64_t attempt) {
  std::string binary = binary_.empty() ? DaemonBinary() : binary_;
  Log(LogLevel::kInfo, "upgrade requested",
      json::Object().Set("attempt", attempt).Set("binary", binary));
  // Nothing starts such a read while the upgrade is pending, so once
  // settled both looks at the state below see every byte read.
  Status outcome = co_await AwaitReadsSettled();
  if (outcome.ok()) outcome = co_await AwaitQuiet(attempt);
  if (outcome.ok()) outcome = sources_.ready();
  if (outcome.ok()) {
    // A first look, so a refusal (a run in progress) comes before the check.
    std::vector<int> fds;
    Result<HandoverState> state = Gather(fds, attempt);
    outcome = state.status();
    if (outcome.ok()) {
      Result<UniqueFd> written =
          ReplaceFile(UpgradeStatePath(state_dir_), EncodeHandover(*state), SyncMode::kByCaller);
      outcome = written.status();
    }
  }
  if (outcome.ok()) outcome = co_await Check(binary);
  // The daemon may have begun to stop, or a reset, while the check ran.
  if (outcome.ok()) outcome = sources_.ready();
  if (outcome.ok()) outcome = Replace(binary, attempt);  // returns only on failure
  ++failures_;
  Log(LogLevel::kWarn, "upgrade failed; this daemon keeps serving",
      json::Object().Set("attempt", attempt).Set("error", outcome.message()));
  Report(attempt, outcome);
  running_ = false;
  if (wait_.count() > 0) sources_.hold(false);  // held requests proceed on this daemon
  if (sources_.handing_over) sources_.handing_over(false);
}

Result<HandoverState> Upgrader::Gather(std::vector<int>& fds, int64_t attempt) {
  HandoverState s;
  s.from_version = AGENTD_VERSION;
  s.upgrades = upgrades_ + 1;
  s.upgrade_failures = failures_;
  s.attempt = attempt;
  s.uptime_ms = sources_.uptime_ms();
  s.generation = sources_.generation();
  s.init_pid = sources_.init_pid();
  Result<json::Array> contexts = sources_.contexts(fds);
  if (!contexts.ok()) return contexts.status();
  s.contexts = std::move(*contexts);
  Result<json::Array> execs = sources_.execs(fds);
  if (!execs.ok()) return execs.status();
  s.execs = std::move(*execs);
  s.streams = sources_.streams(fds);
  s.listeners = sources_.listeners();
  fds.insert(fds.end(), s.listeners.begin(), s.listeners.end());
  return s;
}

asio::awaitable<Status> Upgrader::Check(const std::string& binary) {
  Result<UniqueFd> in = DupAboveStdio(STDIN_FILENO);
  Result<UniqueFd> err = DupAboveStdio(STDERR_FILENO);
  if (!in.ok() || !err.ok()) co_return PosixError(EMFILE, "cannot prepare the upgrade check");
  SpawnSpec spec;
  spec.argv = {binary, "--upgrade-check", UpgradeStatePath(state_dir_)};
  spec.argv.insert(spec.argv.end(), argv_.begin() + 1, argv_.end());
  for (char** e = environ; *e; ++e) spec.env.emplace_back(*e);
  spec.stdin_fd = in->get();
  spec.stdout_fd = err->get();  // its words go to the daemon's log stream
  spec.stderr_fd = err->get();
  Result<SpawnResult> spawned = Spawn(spec);
  if (!spawned.ok()) co_return spawned.status();
  if (spawned->error != 0) {
    int status = 0;  // already in _exit(); collected before the reaper can see it
    while (::waitpid(spawned->pid, &status, __WALL) < 0 && errno == EINTR) {
    }
    co_return Status::InvalidRequest("the new binary cannot run: " + spawned->reason);
  }
  // The reaper delivers the exit; the timer is both the wake-up and the limit.
  asio::steady_timer done(io_, kCheckLimit);
  std::optional<int> wait_status;
  reaper_.Watch(spawned->pid, [&done, &wait_status](int status) {
    wait_status = status;
    done.cancel();
  });
  co_await done.async_wait(kUseNothrow);
  if (!wait_status) {
    ::kill(spawned->pid, SIGKILL);
    while (!wait_status) {  // the reaper collects it; its handler still points here
      done.expires_after(std::chrono::seconds(1));
      co_await done.async_wait(kUseNothrow);
    }
    co_return Status::InvalidRequest("the new binary's check did not finish within " +
                                     std::to_string(kCheckLimit.count()) + " s");
  }
  ExitOutcome exit = DecodeWaitStatus(*wait_status);
  if (exit.signal) {
    co_return Status::InvalidRequest("the new binary's check died of " + *exit.signal);
  }
  if (exit.exit_code != 0) {
    co_return Status::InvalidRequest("the new binary refused the upgrade state (check exit code " +
                                     std::to_string(exit.exit_code) + ")");
  }
  co_return Status::Ok();
}

Status Upgrader::Replace(const std::string& binary, int64_t attempt) {
  // From here to the execve nothing else runs on the io thread: the state
  // written is the state handed over.
  std::vector<int> fds;
  Result<HandoverState> state = Gather(fds, attempt);
  if (!state.ok()) return state.status();
  Result<int> secrets = WriteSecrets(sources_.secrets());
  if (!secrets.ok()) return secrets.status();
  UniqueFd secrets_fd(*secrets);
  state->secrets_fd = secrets_fd.get();
  fds.push_back(secrets_fd.get());
  Result<UniqueFd> written =
      ReplaceFile(UpgradeStatePath(state_dir_), EncodeHandover(*state), SyncMode::kByCaller);
  if (!written.ok()) return written.status();
  written->reset();
  std::vector<std::string> args = argv_;
  args.insert(args.begin() + 1, {"--upgrade-resume", UpgradeStatePath(state_dir_)});
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  Log(LogLevel::kInfo, "upgrading in place",
      json::Object()
          .Set("attempt", attempt)
          .Set("binary", binary)
          .Set("execs", state->execs.size())
          .Set("streams", state->streams.size()));
  CloexecAll();
  SetCloexec(fds, false);
  ::execve(binary.c_str(), cargs.data(), environ);
  int err = errno;
  SetCloexec(fds, true);
  return PosixError(err, "cannot execute the new binary", binary);
}

void Upgrader::Report(int64_t attempt, const Status& outcome) {
  json::Object o;
  o.Set("attempt", attempt);
  o.Set("ok", outcome.ok());
  o.Set("pid", ::getpid());
  o.Set("version", AGENTD_VERSION);
  o.Set("upgrades", upgrades_);
  o.Set("upgrade_failures", failures_);
  if (!outcome.ok()) o.Set("error", outcome.message());
  o.Set("pending", false);
  last_status_ = o;
  WriteStatus(o);
}

void Upgrader::ReportPending(int64_t attempt) {
  json::Object o = last_status_;
  o.Set("pending", true);
  o.Set("pending_attempt", attempt);
  o.Set("waiting_for", waiting_for_ ? waiting_for_->what : std::string());
  o.Set("wait_limit_ms", static_cast<int64_t>(wait_.count()));
  WriteStatus(o);
}

void Upgrader::WriteStatus(const json::Object& o) {
  // Synced and closed before the rename: `agentd --upgrade` returns the
  // moment the file appears, so nothing of it may still be in flight then
  // (an open descriptor showed up in the daemon's descriptor count).
  Status written = WriteFileAtomically(UpgradeStatusPath(state_dir_), json::Serialize(o) + "\n");
  if (!written.ok()) {
    Log(LogLevel::kWarn, "cannot write the upgrade status",
        json::Object().Set("error", written.message()));
  }
}

}  // namespace agentd
