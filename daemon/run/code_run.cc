#include "run/code_run.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "agentd/trees/unique_fd.h"
#include "metrics/daemon_metrics.h"
#include "proc/runtimes.h"
#include "run/code_drivers.h"
#include "run/result_lines.h"
#include "run/tree_scan.h"
#include "sys/awaitable.h"

namespace agentd {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Stderr bytes the summary's error line is looked for in.
constexpr uint64_t kSummaryTailBytes = 4096;
// The stdout bytes (the last ones) searched for result lines: read on the
// io thread, so bounded; and the size of one read.
constexpr uint64_t kResultScanBytes = 4 << 20;
constexpr uint64_t kResultReadBytes = 64 << 10;
// How often a waiting run checks that its client is still there.
constexpr std::chrono::seconds kPeerCheckInterval{1};

double Since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

std::string StderrTail(const OutputLog& log) {
  uint64_t from = std::max(log.retained_from(),
                           log.next() > kSummaryTailBytes ? log.next() - kSummaryTailBytes : 0);
  std::string out;
  (void)log.Read(from, log.next() - from, &out);
  return out;
}

struct Scanned {
  std::optional<TreeSnapshot> snapshot;
};

// The blocking work of one scan, for RunBlocking (a plain function: the
// lambda is built outside any coroutine frame).
std::function<Scanned()> MakeScan(const std::string& root, const ScanOptions& options,
                                  std::shared_ptr<TreeSnapshot> before) {
  return [root, options, before]() {
    Result<TreeSnapshot> s = ScanTree(root, options, before.get());
    Scanned out;
    if (s.ok()) out.snapshot = std::move(*s);
    return out;
  };
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

// stdout read through ResultLines: the last kResultScanBytes of the
// retained stream, in pieces, so a result line may span any of them.
std::string StdoutWithoutResults(const OutputLog& log, const std::string& marker, bool* cut,
                                 RunResponse* r) {
  uint64_t from = log.retained_from();
  if (log.next() - from > kResultScanBytes) from = log.next() - kResultScanBytes;
  ResultLines lines(marker, from);
  std::string chunk;
  for (uint64_t at = from; at < log.next();) {
    chunk.clear();
    if (!log.Read(at, std::min<uint64_t>(kResultReadBytes, log.next() - at), &chunk).ok() ||
        chunk.empty()) {
      break;
    }
    at += chunk.size();
    lines.Feed(chunk);
  }
  lines.Finish();
  if (lines.found()) {
    r->result = lines.result();
    r->result_error = lines.error();
  }
  return lines.Text(cut);
}

RunResponse BuildAnswer(const ExecView& exec, const std::string& cwd, const RunRequest& run,
                        const TreeDiff& diff, std::optional<RunException> exception,
                        std::optional<EgressReport> egress) {
  Runtime runtime = run.runtime;
  ExecInfo info = exec.Info();
  RunResponse r;
  r.exit_code = info.exit_code;
  r.signal = info.signal;
  r.timed_out = info.timed_out;
  r.killed_by = info.killed_by;
  r.limit = info.limit;
  r.duration_ms = info.duration_ms;
  r.error = info.error;
  r.profile = info.profile;
  r.restriction = info.restriction;
  r.network = info.network;
  if (egress && egress->accounting) r.egress = std::move(*egress);
  // Only a failed run has an exception (a report beside exit 0 was
  // written by the code itself).
  if (info.exit_code != 0) r.exception = std::move(exception);
  r.success = info.exit_code == 0 && !info.killed_by && !info.error;
  bool cut_out = false;
  bool cut_err = false;
  r.stdout_text = run.result_marker.empty() ? RunAnswerText(exec.log(Stream::kStdout), &cut_out)
                                            : StdoutWithoutResults(exec.log(Stream::kStdout),
                                                                   run.result_marker, &cut_out, &r);
  r.stderr_text = RunAnswerText(exec.log(Stream::kStderr), &cut_err);
  r.truncated = cut_out || cut_err;
  r.stdout_bytes = info.stdout_bytes;
  r.stderr_bytes = info.stderr_bytes;
  r.changed_files = diff.changes;
  r.changed_files_truncated = diff.truncated;
  r.changed_files_bound = diff.bound;
  r.runtime = std::string(RuntimeName(runtime));
  r.cwd = cwd;
  r.timeout_sec = info.limit_timeout_sec.value_or(0);
  RunOutcome o;
  o.exit_code = info.exit_code;
  o.signal = info.signal;
  o.killed_by = info.killed_by;
  o.limit = info.limit;
  o.duration_ms = info.duration_ms;
  o.changed_files = diff.total;
  // A directory that was not scanned (cwd "/") is not news in every summary.
  o.changed_files_truncated = diff.truncated && diff.bound && diff.bound->name != "not_scanned";
  o.stderr_tail = StderrTail(exec.log(Stream::kStderr));
  o.exception = r.exception;
  o.egress = r.egress;  // every destination: the summary names the most refused
  r.summary = RunSummary(o);
  if (r.egress) BoundEgressReport(*r.egress, kMaxRunEgressDestinations);
  return r;
}

}  // namespace

std::string RunAnswerText(const OutputLog& log, bool* cut) {
  uint64_t from = log.retained_from();
  uint64_t next = log.next();
  std::string head;
  std::string tail;
  if (from == 0 && next <= kRunOutputBytes) {
    (void)log.Read(0, next, &head);
    return head;
  }
  *cut = true;
  uint64_t tail_bytes = kRunOutputBytes - (from == 0 ? kRunHeadBytes : 0);
  tail_bytes = std::min(tail_bytes, next - from);
  (void)log.Read(next - tail_bytes, tail_bytes, &tail);
  std::string_view t = Utf8Tail(tail, tail.size());
  if (from > 0) return OmittedMarker(next - t.size()) + std::string(t);
  (void)log.Read(0, kRunHeadBytes, &head);
  std::string_view h = Utf8Head(head, kRunHeadBytes);
  return std::string(h) + OmittedMarker(next - h.size() - t.size()) + std::string(t);
}

asio::awaitable<Result<RunResponse>> CodeRun::Run(const RunRequest& run,
                                                  const std::function<bool()>& client_gone) {
  int64_t timeout =
      std::min(run.timeout_sec.value_or(options_.default_timeout_sec), kMaxRunTimeoutSec);
  std::string cwd = run.cwd.value_or(DefaultRunCwd(options_.workdir));
  // Checked before the first scan, which may take seconds: a run that
  // cannot start costs nothing. The checked request is what starts.
  Result<ExecEngine::Prepared> prepared = engine_.Prepare(RunToExecRequest(run, cwd, timeout));
  if (!prepared.ok()) co_return prepared.status();
  // Python runs through its driver, which reports an uncaught exception on
  // fd 3. Without a memfd the code runs as plain `python3 -c` (no report).
  UniqueFd report;
  if (run.runtime == Runtime::kPython) {
    report.reset(::memfd_create("agentd-run-report", MFD_CLOEXEC));
    if (report) {
      prepared->argv = PythonDriverArgv(run.code);
      prepared->fd3 = report.get();
    }
  }

  metrics::DaemonMetrics& m = metrics::Daemon();
  ScanOptions options;
  options.max_entries = options_.scan_max_entries;
  options.max_time = std::chrono::milliseconds(options_.scan_max_ms);
  options.exclude = DirIdentity(engine_.state_dir());
  std::shared_ptr<TreeSnapshot> before;
  // The whole guest is not a working directory: scanning "/" would read
  // every file system up to the bounds and report the guest's own churn.
  bool scan_root = cwd.find_first_not_of('/') == std::string::npos;
  if (run.scan_changes && !scan_root) {
    auto t0 = SteadyClock::now();
    std::function<Scanned()> scan = MakeScan(cwd, options, nullptr);
    Scanned scanned = co_await RunBlocking(blocking_, std::move(scan));
    m.run_phase.With({"scan_before"}).Observe(Since(t0));
    if (scanned.snapshot) before = std::make_shared<TreeSnapshot>(std::move(*scanned.snapshot));
  }

  Result<ExecEngine::Started> started = engine_.StartRun(std::move(*prepared));
  if (!started.ok()) co_return started.status();
  ExecView exec = started->exec;
  auto t_exec = SteadyClock::now();
  co_await WaitForRun(engine_, exec, client_gone);
  m.run_phase.With({"execution"}).Observe(Since(t_exec));

  TreeDiff diff;
  if (run.scan_changes && scan_root) {
    diff.truncated = true;
    diff.bound = LimitHit{"not_scanned", 0, "entries"};
  }
  if (before) {
    auto t0 = SteadyClock::now();
    std::function<Scanned()> scan = MakeScan(cwd, options, before);
    Scanned after = co_await RunBlocking(blocking_, std::move(scan));
    m.run_phase.With({"scan_after"}).Observe(Since(t0));
    if (after.snapshot) {
      diff = DiffTrees(*before, *after.snapshot, options_.changed_files_max);
    } else {
      diff.truncated = true;  // the directory went away
    }
  }
  std::optional<EgressReport> egress;
  if (Result<EgressReport> e = engine_.Egress(exec.Info().id); e.ok()) egress = std::move(*e);
  RunResponse answer = BuildAnswer(exec, cwd, run, diff, ReadReport(report), std::move(egress));
  engine_.Discard(exec);
  co_return answer;
}

}  // namespace agentd
