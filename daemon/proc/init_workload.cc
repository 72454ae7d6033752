#include "proc/init_workload.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include <cerrno>

#include "agentd/trees/posix_error.h"
#include "agentd/trees/unique_fd.h"
#include "log/log.h"
#include "proc/child_env.h"
#include "proc/signals.h"
#include "proc/spawn.h"
#include "proc/user_db.h"
#include "proc/wait_status.h"

extern char** environ;

namespace agentd {
namespace {

constexpr int kForwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

// A copy of the daemon's descriptor `fd` numbered 3 or above (Spawn moves
// it back into place), or /dev/null when the daemon has none there.
Result<UniqueFd> StdioCopy(int fd) {
  UniqueFd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 3));
  if (copy) return copy;
  UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null) return PosixError(errno, "cannot open /dev/null for the workload");
  copy.reset(::fcntl(null.get(), F_DUPFD_CLOEXEC, 3));
  if (!copy) return PosixError(errno, "cannot copy a descriptor for the workload");
  return copy;
}

// A child whose exec failed is already in _exit(); collect it before the
// Reaper's loop can (as the exec engine does for a failed exec).
// "USER[:GROUP]" resolved in the guest's files; nullopt for an empty spec.
Result<std::optional<Credentials>> ResolveInitUser(const std::string& spec) {
  if (spec.empty()) return std::optional<Credentials>();
  size_t colon = spec.find(':');
  std::optional<std::string> user = spec.substr(0, colon);
  std::optional<std::string> group;
  if (colon != std::string::npos) group = spec.substr(colon + 1);
  return ResolveCredentials(user, group, LoadUserDb());
}

int WaitForFailedChild(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, __WALL) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

InitWorkload::InitWorkload(asio::io_context& io, Reaper& reaper, std::vector<std::string> command,
                           bool exit_with_cmd, std::string user, StopHandler stop)
    : signals_(io),
      reaper_(reaper),
      command_(std::move(command)),
      exit_with_cmd_(exit_with_cmd),
      user_(std::move(user)),
      stop_(std::move(stop)) {}

void InitWorkload::Adopt(pid_t pid) {
  adopted_ = true;
  pid_ = pid;
  if (pid_ > 0) WatchExit();
  Log(LogLevel::kInfo, "workload taken over", json::Object().Set("pid", pid_));
}

void InitWorkload::WatchExit() {
  reaper_.Watch(pid_, [this](int status) {
    ExitOutcome outcome = DecodeWaitStatus(status);
    OnExit(outcome.exit_code, outcome.signal);
  });
}

Status InitWorkload::Start(std::optional<struct rlimit> nofile) {
  nofile_ = nofile;
  for (int signo : kForwarded) {
    asio::error_code ec;
    signals_.add(signo, ec);
    if (ec) return PosixError(ec.value(), "cannot watch SIG" + SignalName(signo));
  }
  Arm();
  // From the io loop, so a CMD that fails at once stops a daemon that runs.
  if (!command_.empty() && !adopted_) asio::post(signals_.get_executor(), [this] { Launch(); });
  return Status::Ok();
}

void InitWorkload::Arm() {
  signals_.async_wait([this](const asio::error_code& ec, int signo) {
    if (ec) return;
    OnSignal(signo);
    Arm();
  });
}

void InitWorkload::Launch() {
  if (stopped_) return;
  std::vector<UniqueFd> stdio;
  for (int fd = 0; fd < 3; ++fd) {
    Result<UniqueFd> copy = StdioCopy(fd);
    if (!copy.ok()) {
      Log(LogLevel::kError, "workload could not start",
          json::Object().Set("reason", copy.status().message()));
      return OnExit(126, std::nullopt);
    }
    stdio.push_back(std::move(*copy));
  }
  Result<std::optional<Credentials>> identity = ResolveInitUser(user_);
  if (!identity.ok()) {
    Log(LogLevel::kError, "workload could not start",
        json::Object().Set("reason", identity.status().message()).Set("user", user_));
    return OnExit(126, std::nullopt);
  }
  const Credentials* credentials = identity->has_value() ? &**identity : nullptr;
  SpawnSpec spec;
  spec.argv = command_;
  spec.env = BuildChildEnv(environ, {}, credentials, {});
  spec.credentials = credentials;
  spec.stdin_fd = stdio[0].get();
  spec.stdout_fd = stdio[1].get();
  spec.stderr_fd = stdio[2].get();
  spec.nofile = nofile_;
  Result<SpawnResult> spawned = Spawn(spec);
  if (!spawned.ok() || spawned->error != 0) {
    std::string reason = spawned.ok() ? spawned->reason : spawned.status().message();
    int code = 126;
    if (spawned.ok()) code = DecodeWaitStatus(WaitForFailedChild(spawned->pid)).exit_code;
    Log(LogLevel::kError, "workload could not start", json::Object().Set("reason", reason));
    return OnExit(code, std::nullopt);
  }
  pid_ = spawned->pid;
  WatchExit();
  Log(LogLevel::kInfo, "workload started", json::Object().Set("pid", pid_));
}

void InitWorkload::OnSignal(int signo) {
  if (pid_ > 0) {
    // The whole group, as tini does: a shell's children hear it too.
    int rc = ::kill(-pid_, signo);
    Log(LogLevel::kInfo, "forwarded signal",
        json::Object().Set("signal", SignalName(signo)).Set("pid", pid_).Set("delivered", rc == 0));
  }
  if (signo != SIGTERM && signo != SIGINT) return;
  stop_requested_ = true;
  if (pid_ <= 0) RequestStop(0);
}

void InitWorkload::OnExit(int exit_code, const std::optional<std::string>& signal) {
  json::Object fields;
  fields.Set("exit_code", exit_code);
  if (signal) fields.Set("signal", *signal);
  Log(LogLevel::kInfo, "workload exited", std::move(fields));
  pid_ = -1;
  if (exit_with_cmd_) return RequestStop(exit_code);
  if (stop_requested_) RequestStop(0);
}

void InitWorkload::RequestStop(int exit_code) {
  if (stopped_) return;
  stopped_ = true;
  stop_(exit_code);
}

}  // namespace agentd
