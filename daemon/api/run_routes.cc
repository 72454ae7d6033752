// POST /v1/run (docs/PROTOCOL.md, "Run code"): one code action to
// completion, with its output, its outcome in one line, and the files it
// changed under its working directory. The run is an exec the daemon
// starts and waits for (every exec guarantee and limit applies); its record
// is internal and removed once the answer is built. The changed-files
// scans run on the blocking pool.
#include <algorithm>
#include <functional>

#include "agentd/protocol/run.h"
#include "api/exec_api.h"
#include "api/query_reader.h"
#include "api/routes.h"
#include "metrics/daemon_metrics.h"
#include "proc/runtimes.h"
#include "run/tree_scan.h"
#include "sys/awaitable.h"

namespace agentd {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Stderr bytes the summary's error line is looked for in.
constexpr uint64_t kSummaryTailBytes = 4096;
// How often a waiting run checks that its client is still there.
constexpr std::chrono::seconds kPeerCheckInterval{1};

double Since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

// The stream as a run answer carries it: whole up to kRunOutputBytes, else
// its first and last bytes around a marker. Sets *cut when bytes are left out.
std::string AnswerText(const OutputLog& log, bool* cut) {
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

asio::awaitable<void> WaitForRun(ExecEngine& engine, std::shared_ptr<ExecRecord> rec,
                                 Request& req) {
  bool killed = false;
  while (!rec->finished()) {
    if (!killed && req.PeerClosed()) {
      // Nobody will read the answer: end the run now rather than at its timeout.
      KillRequest kill;
      kill.signal = "KILL";
      (void)engine.Kill(rec->id, kill);
      killed = true;
    }
    co_await rec->changed.Wait(SteadyClock::now() + kPeerCheckInterval);
  }
}

RunResponse BuildAnswer(const ExecRecord& rec, const std::string& cwd, Runtime runtime,
                        const TreeDiff& diff) {
  ExecInfo info = rec.Info();
  RunResponse r;
  r.exit_code = info.exit_code;
  r.signal = info.signal;
  r.timed_out = info.timed_out;
  r.killed_by = info.killed_by;
  r.limit = info.limit;
  r.duration_ms = info.duration_ms;
  r.error = info.error;
  r.success = info.exit_code == 0 && !info.killed_by && !info.error;
  bool cut_out = false;
  bool cut_err = false;
  r.stdout_text = AnswerText(*rec.logs[0], &cut_out);
  r.stderr_text = AnswerText(*rec.logs[1], &cut_err);
  r.truncated = cut_out || cut_err;
  r.stdout_bytes = info.stdout_bytes;
  r.stderr_bytes = info.stderr_bytes;
  r.changed_files = diff.changes;
  r.changed_files_truncated = diff.truncated;
  r.changed_files_bound = diff.bound;
  r.runtime = std::string(RuntimeName(runtime));
  r.cwd = cwd;
  r.timeout_sec = rec.timeout_sec.value_or(0);
  RunOutcome o;
  o.exit_code = info.exit_code;
  o.signal = info.signal;
  o.killed_by = info.killed_by;
  o.limit = info.limit;
  o.duration_ms = info.duration_ms;
  o.changed_files = diff.total;
  // A directory that was not scanned (cwd "/") is not news in every summary.
  o.changed_files_truncated = diff.truncated && diff.bound && diff.bound->name != "not_scanned";
  o.stderr_tail = StderrTail(*rec.logs[1]);
  r.summary = RunSummary(o);
  return r;
}

asio::awaitable<void> RunCode(ApiContext& ctx, ExecEngine& engine, Request& req, Response& res) {
  if (Status s = QueryReader(req.query()).Finish(); !s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  Result<json::Value> doc = co_await req.ReadJson();
  if (!doc.ok()) {
    co_await res.SendError(doc.status());
    co_return;
  }
  Result<RunRequest> run = DecodeRunRequest(*doc);
  if (!run.ok()) {
    co_await res.SendError(run.status());
    co_return;
  }
  const DaemonConfig& config = ctx.config;
  int64_t timeout = std::min(run->timeout_sec.value_or(config.run_timeout_sec), kMaxRunTimeoutSec);
  std::string cwd = run->cwd.value_or(DefaultRunCwd(config.workdir));
  ExecStartRequest exec = RunToExecRequest(*run, cwd, timeout);
  Status ready = engine.CheckRuntime(exec);
  if (!ready.ok()) {
    co_await res.SendError(ready);
    co_return;
  }
  metrics::DaemonMetrics& m = metrics::Daemon();
  ScanOptions options;
  options.max_entries = config.scan_max_entries;
  options.max_time = std::chrono::milliseconds(config.scan_max_ms);
  options.exclude = DirIdentity(engine.state_dir());
  std::shared_ptr<TreeSnapshot> before;
  // The whole guest is not a working directory: scanning "/" would read
  // every file system up to the bounds and report the guest's own churn.
  bool scan_root = cwd.find_first_not_of('/') == std::string::npos;
  if (run->scan_changes && !scan_root) {
    auto t0 = SteadyClock::now();
    std::function<Scanned()> scan = MakeScan(cwd, options, nullptr);
    Scanned scanned = co_await RunBlocking(ctx.blocking, std::move(scan));
    m.run_phase.With({"scan_before"}).Observe(Since(t0));
    if (scanned.snapshot) before = std::make_shared<TreeSnapshot>(std::move(*scanned.snapshot));
  }

  Result<ExecEngine::Started> started = engine.StartRun(std::move(exec));
  if (!started.ok()) {
    co_await res.SendError(started.status());
    co_return;
  }
  std::shared_ptr<ExecRecord> rec = started->record;
  auto t_exec = SteadyClock::now();
  co_await WaitForRun(engine, rec, req);
  m.run_phase.With({"execution"}).Observe(Since(t_exec));

  TreeDiff diff;
  if (run->scan_changes && scan_root) {
    diff.truncated = true;
    diff.bound = LimitHit{"not_scanned", 0, "entries"};
  }
  if (before) {
    auto t0 = SteadyClock::now();
    std::function<Scanned()> scan = MakeScan(cwd, options, before);
    Scanned after = co_await RunBlocking(ctx.blocking, std::move(scan));
    m.run_phase.With({"scan_after"}).Observe(Since(t0));
    if (after.snapshot) {
      diff = DiffTrees(*before, *after.snapshot, config.changed_files_max);
    } else {
      diff.truncated = true;  // the directory went away
    }
  }
  RunResponse answer = BuildAnswer(*rec, cwd, run->runtime, diff);
  engine.Discard(rec);
  json::Value body = EncodeRunResponse(answer);
  co_await res.SendJson(200, body);
}

}  // namespace

void RegisterRunRoutes(Router& router, ApiContext& ctx, ExecEngine& engine) {
  ctx.runtimes = [&engine] { return engine.Runtimes(); };
  ctx.limits = [&engine, &ctx] {
    const Limiter& l = engine.limiter();
    json::Array supported;
    for (const std::string& name : l.Supported()) supported.emplace_back(name);
    json::Object defaults;
    if (ctx.config.default_timeout_sec > 0)
      defaults.Set("timeout_sec", ctx.config.default_timeout_sec);
    WriteExecLimits(defaults, ctx.config.default_limits);
    json::Object o;
    o.Set("mechanism", std::string(l.mechanism_name()));
    o.Set("supported", std::move(supported));
    o.Set("defaults", std::move(defaults));
    o.Set("run_timeout_sec", ctx.config.run_timeout_sec);
    return o;
  };
  router.Add("POST", "/v1/run", [&ctx, &engine](Request& req, Response& res) {
    return RunCode(ctx, engine, req, res);
  });
}

}  // namespace agentd
