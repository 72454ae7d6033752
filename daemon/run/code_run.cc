#include "run/code_run.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "agentd/trees/unique_fd.h"
#include "metrics/daemon_metrics.h"
#include "proc/runtimes.h"
#include "run/artifacts.h"
#include "run/change_scan.h"
#include "run/code_drivers.h"
#include "run/run_answer.h"
#include "sys/awaitable.h"

namespace agentd {
namespace {

using SteadyClock = std::chrono::steady_clock;

// How often a waiting run checks that its client is still there.
constexpr std::chrono::seconds kPeerCheckInterval{1};

double Since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

asio::awaitable<void> WaitForRun(ExecEngine& engine, ExecView exec,
                                 const std::function<bool()>& client_gone) {
  bool killed = false;
  while (!exec.finished()) {
    if (!killed && client_gone && client_gone()) {
      // Nobody will read the answer: end the run now rather than at its timeout.
      KillRequest kill;
      kill.signal = "KILL";
      // Nobody to tell either way: a kill that found the run already over
      // changes nothing, and the loop below waits for the end regardless.
      (void)engine.Kill(exec.id(), kill);
      killed = true;
    }
    co_await exec.WaitChange(SteadyClock::now() + kPeerCheckInterval);
  }
}

// The driver's exception report: what it wrote to its descriptor 3, if
// that is one well-formed report within kRunReportBytes; else nothing (a
// run whose code wrote there itself loses its report, nothing more).
std::optional<RunException> ReadReport(const UniqueFd& fd) {
  if (!fd) return std::nullopt;
  std::string buf(kRunReportBytes + 1, '\0');
  size_t got = 0;
  while (got < buf.size()) {
    ssize_t n = ::pread(fd.get(), buf.data() + got, buf.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got == 0 || got > kRunReportBytes) return std::nullopt;
  buf.resize(got);
  Result<json::Value> doc = json::Parse(buf);
  if (!doc.ok()) return std::nullopt;
  Result<RunException> e = DecodeRunException(*doc);
  if (!e.ok()) return std::nullopt;
  return std::move(*e);
}

}  // namespace

CodeRun::CodeRun(ExecEngine& engine, asio::thread_pool& blocking, CodeRunOptions options)
    : engine_(engine),
      blocking_(blocking),
      options_(std::move(options)),
      ts_driver_("ts-run", std::string(TsDriverSource()), options_.shared_driver_dir,
                 engine.state_dir() + "/drivers") {}

asio::awaitable<Result<RunResponse>> CodeRun::Run(const RunRequest& run,
                                                  const std::function<bool()>& client_gone) {
  int64_t timeout =
      std::min(run.timeout_sec.value_or(options_.default_timeout_sec), kMaxRunTimeoutSec);
  std::string cwd = run.cwd.value_or(DefaultRunCwd(options_.workdir));
  // Checked before the first scan, which may take seconds: a run that
  // cannot start costs nothing. The checked request is what starts.
  ExecStartRequest request = RunToExecRequest(run, cwd, timeout);
  if (Status s = co_await engine_.ResolveEgressNames(request); !s.ok()) co_return s;
  Result<ExecEngine::Prepared> prepared = engine_.Prepare(std::move(request));
  if (!prepared.ok()) co_return prepared.status();
  // Python runs through its driver, which reports an uncaught exception on
  // fd 3. Without a memfd the code runs as plain `python3 -c` (no report).
  // TypeScript runs through a preload driver that must be a file the run's
  // user can read; without one the code runs as plain `bun -e` (no report).
  UniqueFd report;
  if (run.runtime == Runtime::kPython || run.runtime == Runtime::kTs) {
    report.reset(::memfd_create("agentd-run-report", MFD_CLOEXEC));
  }
  if (report && run.runtime == Runtime::kPython) {
    prepared->argv = PythonDriverArgv(run.code);
    prepared->fd3 = report.get();
  } else if (report && run.runtime == Runtime::kTs) {
    const std::optional<Credentials>& who = prepared->identity;
    bool same_identity = !who || !who->uid || *who->uid == ::geteuid();
    if (std::optional<std::string> driver = ts_driver_.Ensure(same_identity)) {
      prepared->argv = TsDriverArgv(*driver, run.code);
      prepared->fd3 = report.get();
    }
  }

  ChangeScan scan(blocking_, cwd,
                  ChangeScanOptions{.enabled = run.scan_changes,
                                    .max_entries = options_.scan_max_entries,
                                    .max_ms = options_.scan_max_ms,
                                    .changed_files_max = options_.changed_files_max,
                                    .exclude = DirIdentity(engine_.state_dir())});
  co_await scan.Before();
  ArtifactScan artifacts(blocking_, cwd, run.artifacts_dir);
  co_await artifacts.Before();
  Result<ExecEngine::Started> started = engine_.StartRun(std::move(*prepared));
  if (!started.ok()) co_return started.status();
  ExecView exec = started->exec;
  auto t_exec = SteadyClock::now();
  co_await WaitForRun(engine_, exec, client_gone);
  metrics::Daemon().run_phase.With({"execution"}).Observe(Since(t_exec));
  TreeDiff diff = co_await scan.After();
  std::optional<ArtifactList> made = co_await artifacts.After();
  std::optional<EgressReport> egress;
  if (Result<EgressReport> e = engine_.Egress(exec.Info().id); e.ok()) egress = std::move(*e);
  RunResponse answer =
      BuildRunAnswer(AnswerParts{.info = exec.Info(),
                                 .out = StreamWindow::Whole(exec.log(Stream::kStdout)),
                                 .err = StreamWindow::Whole(exec.log(Stream::kStderr)),
                                 .cwd = cwd,
                                 .runtime = run.runtime,
                                 .result_marker = run.result_marker,
                                 .diff = std::move(diff),
                                 .exception = ReadReport(report),
                                 .egress = std::move(egress),
                                 .artifacts = std::move(made)});
  engine_.Discard(exec);
  co_return answer;
}

}  // namespace agentd
