// Checks of code runs and limits (docs/PROTOCOL.md, "Run code", "Limits").
// A check whose runtime or limit mechanism this guest lacks is skipped: the
// guest says what it offers in /v1/health ("runtimes", "limits").
#include <algorithm>

#include "checks.h"

namespace agentd::conformance {
namespace {

std::vector<std::string> Runtimes(CheckContext& ctx) {
  return ExpectOk(ctx.client().Health(), "health").runtimes;
}

void NeedRuntime(CheckContext& ctx, std::string_view name) {
  std::vector<std::string> r = Runtimes(ctx);
  if (std::find(r.begin(), r.end(), name) == r.end()) {
    throw CheckSkipped{"the guest does not offer the " + std::string(name) + " runtime"};
  }
}

struct LimitsInfo {
  std::string mechanism;
  std::vector<std::string> supported;
  std::string network_why;  // why "network": "none" is not supported ("" when it is)
  std::string disk_why;     // why "disk_bytes" is not supported ("" when it is)
  bool Supports(std::string_view name) const {
    return std::find(supported.begin(), supported.end(), name) != supported.end();
  }
};

LimitsInfo Limits(CheckContext& ctx) {
  HealthResponse h = ExpectOk(ctx.client().Health(), "health");
  const json::Value* limits = h.extra.Find("limits");
  Expect(limits && limits->is_object(), "health has no \"limits\" object");
  LimitsInfo out;
  if (const json::Value* m = limits->Find("mechanism"); m && m->is_string()) {
    out.mechanism = m->as_string();
  }
  if (const json::Value* s = limits->Find("supported"); s && s->is_array()) {
    for (const json::Value& v : s->as_array()) {
      if (v.is_string()) out.supported.push_back(v.as_string());
    }
  }
  if (const json::Value* w = limits->Find("network_why"); w && w->is_string()) {
    out.network_why = w->as_string();
  }
  if (const json::Value* w = limits->Find("disk_why"); w && w->is_string()) {
    out.disk_why = w->as_string();
  }
  return out;
}

void NeedCgroups(CheckContext& ctx) {
  if (Limits(ctx).mechanism == "rlimit") throw CheckSkipped{"the guest has no usable cgroup"};
}

RunResponse Run(CheckContext& ctx, RunRequest req, std::string_view what) {
  return ExpectOk(ctx.client().RunCode(std::move(req)), what);
}

// "network": "none" (docs/PROTOCOL.md, "No network"): a namespace of the
// run's own (not the guest's; two runs' cannot be compared, since a freed
// namespace's inode number is reused) whose only interface is
// loopback; where health does not list it, the request is refused.
void ARunWithoutNetworkHasOnlyItsOwnLoopback(CheckContext& ctx) {
  LimitsInfo limits = Limits(ctx);
  RunRequest req;
  req.runtime = Runtime::kShell;
  req.code = "readlink /proc/self/ns/net; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '";
  req.network = kNetworkNone;
  req.scan_changes = false;
  if (!limits.Supports("network")) {
    Status refused = ExpectErrorStatus(ctx.client().RunCode(req), ErrorCode::kLimitUnsupported,
                                       "a run with network none where health does not list it");
    Expect(refused.message().find("network") != std::string::npos,
           "the refusal does not say it is about the network: " + refused.message());
    throw CheckSkipped{"the guest cannot run without network: " + limits.network_why};
  }
  RunResponse first = Run(ctx, req, "a run with network none");
  req.network.reset();
  RunResponse plain = Run(ctx, req, "a run with the guest's network");
  Expect(first.network == std::optional<std::string>(kNetworkNone) && !plain.network,
         "the run answers do not say which ran without network");
  auto lines = [](const std::string& s) {
    std::vector<std::string> out;
    for (size_t i = 0; i < s.size();) {
      size_t j = s.find('\n', i);
      if (j == std::string::npos) j = s.size();
      out.push_back(s.substr(i, j - i));
      i = j + 1;
    }
    return out;
  };
  std::vector<std::string> a = lines(first.stdout_text);
  std::vector<std::string> p = lines(plain.stdout_text);
  Expect(a.size() == 2 && a[1] == "lo",
         "a run with network none sees interfaces other than "
         "loopback: " +
             first.stdout_text);
  Expect(!p.empty() && a[0] != p[0], "a run with network none is in the guest's namespace " + a[0]);
}

RunRequest Shell(std::string code) {
  RunRequest r;
  r.runtime = Runtime::kShell;
  r.code = std::move(code);
  r.timeout_sec = 60;
  return r;
}

bool StartsWith(const std::string& s, std::string_view p) { return s.rfind(p, 0) == 0; }

bool EndsWith(const std::string& s, std::string_view p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

void EachAdvertisedRuntimeRuns(CheckContext& ctx) {
  NeedRuntime(ctx, "shell");
  std::vector<std::string> runtimes = Runtimes(ctx);
  for (const std::string& name : runtimes) {
    RunRequest r;
    r.runtime = *ParseRuntime(name);
    r.code = name == "shell" ? "echo \"$0\" ok" : "console.log('ok')";
    if (name == "python") r.code = "print('ok')";
    RunResponse a = Run(ctx, r, "running " + name);
    std::string want = name == "shell" ? "sh ok\n" : "ok\n";
    Expect(a.exit_code == 0 && a.success && a.stdout_text == want,
           name + " answered " + a.summary + " with stdout \"" + a.stdout_text + "\"");
  }
}

void AbsentRuntimeIsRefused(CheckContext& ctx) {
  HealthResponse h = ExpectOk(ctx.client().Health(), "health");
  for (Runtime r : kAllRuntimes) {
    std::string name(RuntimeName(r));
    if (std::find(h.runtimes.begin(), h.runtimes.end(), name) != h.runtimes.end()) continue;
    RunRequest req;
    req.runtime = r;
    req.code = "1";
    Status refused = ExpectErrorStatus(ctx.client().RunCode(req), ErrorCode::kRuntimeUnavailable,
                                       "running the unadvertised " + name + " runtime");
    // The refusal repeats health's code and reason for that runtime.
    const json::Object& details = refused.details();
    const json::Value* code = details.Find("reason_code");
    const json::Value* reason = details.Find("reason");
    for (const RuntimeUnavailable& u : h.runtimes_unavailable) {
      if (u.runtime != name) continue;
      Expect(code && code->is_string() && code->as_string() == u.code && reason &&
                 reason->is_string() && reason->as_string() == u.reason,
             "the refusal of " + name + " does not repeat health's \"" + u.code + ": " + u.reason +
                 "\"");
    }
    return;
  }
  throw CheckSkipped{"the guest offers every runtime"};
}

void EveryRuntimeIsAdvertisedOrExplained(CheckContext& ctx) {
  HealthResponse h = ExpectOk(ctx.client().Health(), "health");
  for (Runtime r : kAllRuntimes) {
    std::string name(RuntimeName(r));
    bool runs = std::find(h.runtimes.begin(), h.runtimes.end(), name) != h.runtimes.end();
    int explained = 0;
    for (const RuntimeUnavailable& u : h.runtimes_unavailable) {
      if (u.runtime != name) continue;
      ++explained;
      Expect(u.code == "interpreter_not_found" || u.code == "not_executable" ||
                 u.code == "disabled_by_flag" || u.code == "self_test_failed",
             name + " is unavailable with the unknown code \"" + u.code + "\"");
      Expect(!u.reason.empty(), name + " is unavailable with no reason");
    }
    Expect(runs ? explained == 0 : explained == 1,
           name + (runs ? " is both advertised and listed unavailable"
                        : " is neither advertised nor listed unavailable (" +
                              std::to_string(explained) + " entries)"));
  }
}

void PythonExceptionIsStructured(CheckContext& ctx) {
  NeedRuntime(ctx, "python");
  RunRequest r;
  r.runtime = Runtime::kPython;
  r.code = "row = {'tenant': 1}\nprint('ok')\nx = row['amount']\n";
  r.timeout_sec = 60;
  r.scan_changes = false;
  RunResponse a = Run(ctx, r, "a python run that raises");
  Expect(a.exit_code == 1 && a.stdout_text == "ok\n", "answered " + a.summary);
  Expect(a.exception.has_value(), "no exception in the answer (summary \"" + a.summary + "\")");
  const RunException& e = *a.exception;
  Expect(
      e.type == "KeyError" && e.message == "'amount'" && e.line == 3 &&
          e.source_line == "x = row['amount']",
      "exception " + e.type + ": " + e.message + " at line " + std::to_string(e.line.value_or(-1)));
  Expect(e.keys_present == std::vector<std::string>{"tenant"}, "keys_present is not [\"tenant\"]");
  Expect(EndsWith(a.summary, ": KeyError: 'amount' at line 3: x = row['amount']"),
         "summary \"" + a.summary + "\"");
  Expect(a.stderr_text.find("KeyError: 'amount'") != std::string::npos,
         "stderr lacks the traceback: \"" + a.stderr_text + "\"");
  r.code = "x = (1,\n";
  a = Run(ctx, r, "a python run with a syntax error");
  Expect(a.exception && a.exception->type == "SyntaxError" && a.exception->line == 1 &&
             a.exception->column.has_value(),
         "syntax error answered " + a.summary);
}

void ResultLineIsTakenOutOfStdout(CheckContext& ctx) {
  NeedRuntime(ctx, "shell");
  RunRequest r = Shell(
      "echo before; printf '__AGENTD_RESULT__ {\"n\": '; sleep 0.1; "
      "echo '42}'; echo after");
  r.scan_changes = false;
  RunResponse a = Run(ctx, r, "a run printing a result line in two writes");
  Expect(a.stdout_text == "before\nafter\n", "stdout \"" + a.stdout_text + "\"");
  Expect(a.result && json::Serialize(*a.result) == "{\"n\":42}" && !a.result_error,
         "result " + (a.result ? json::Serialize(*a.result) : std::string("absent")) +
             ", result_error " + a.result_error.value_or("null"));
}

void FailureSummaryEndsWithLastErrorLine(CheckContext& ctx) {
  NeedRuntime(ctx, "shell");
  RunResponse a = Run(ctx, Shell("echo first >&2; echo 'boom: the last line' >&2; exit 3"), "run");
  Expect(a.exit_code == 3 && !a.success, "exit code " + std::to_string(a.exit_code.value_or(-1)));
  Expect(StartsWith(a.summary, "exit 3 in ") && EndsWith(a.summary, " ms: boom: the last line"),
         "summary \"" + a.summary + "\"");
}

void TimeoutNamesItselfAndIsClamped(CheckContext& ctx) {
  NeedRuntime(ctx, "shell");
  RunRequest slow = Shell("echo started; sleep 30");
  slow.timeout_sec = 1;
  RunResponse a = Run(ctx, slow, "a run past its timeout");
  Expect(a.exit_code == 124 && a.timed_out && a.killed_by == "timeout",
         "a timeout answered " + a.summary);
  Expect(a.summary == "killed: wall-clock limit 1s exceeded", "summary \"" + a.summary + "\"");
  Expect(a.limit && a.limit->name == "timeout" && a.limit->value == 1, "limit object");
  Expect(a.stdout_text == "started\n", "output before the timeout is kept");
  RunRequest huge = Shell("true");
  huge.timeout_sec = 100000;
  RunResponse b = Run(ctx, huge, "a run asking for 100000 s");
  Expect(b.timeout_sec == 300, "timeout_sec " + std::to_string(b.timeout_sec) + ", not 300");
}

void OutputIsBoundedAndUtf8(CheckContext& ctx) {
  NeedRuntime(ctx, "shell");
  RunResponse a = Run(ctx, Shell("head -c 100000 /dev/zero | tr '\\000' a"), "a loud run");
  Expect(a.truncated && a.stdout_bytes == 100000, "truncated and stdout_bytes");
  Expect(a.stdout_text.size() <= 65536 + 64,
         "stdout carries " + std::to_string(a.stdout_text.size()) + " bytes");
  RunResponse b = Run(ctx, Shell("printf 'a\\377b'"), "invalid UTF-8");
  Expect(b.stdout_text ==
             "a\xef\xbf\xbd"
             "b",
         "invalid bytes become U+FFFD");
}

void ChangedFilesAreReported(CheckContext& ctx) {
  NeedRuntime(ctx, "shell");
  std::string dir = ctx.Scratch("changes");
  RunRequest setup = Shell("mkdir -p '" + dir + "' && cd '" + dir +
                           "' && echo e > edit && echo g > gone && printf AAAA > same");
  Run(ctx, setup, "set-up");
  RunRequest change = Shell("echo more >> edit; rm gone; echo n > new; printf BBBB > same");
  change.cwd = dir;
  RunResponse a = Run(ctx, change, "changing files");
  std::string got;
  for (const ChangedFile& f : a.changed_files) got += f.change + " " + f.path + ";";
  Expect(got == "modified edit;removed gone;added new;modified same;",
         "changed_files were: " + got);
  Expect(EndsWith(a.summary, "; 4 files changed"), "summary \"" + a.summary + "\"");
}

// Artifacts are described by content (a PNG named .txt is image/png) and
// only what the run made below artifacts_dir is one.
void ArtifactsAreDescribedByContent(CheckContext& ctx) {
  NeedRuntime(ctx, "shell");
  std::string dir = ctx.Scratch("artifacts");
  Run(ctx, Shell("mkdir -p '" + dir + "/out' && echo old > '" + dir + "/out/old'"), "set-up");
  RunRequest make =
      Shell("printf '\\211PNG\\r\\n\\032\\n' > out/plot.txt; echo hi > out/hi; echo x > beside");
  make.cwd = dir;
  make.artifacts_dir = "out";
  RunResponse a = Run(ctx, make, "a run making artifacts");
  Expect(a.artifacts.has_value(), "the answer has no \"artifacts\"");
  std::string got;
  for (const Artifact& f : a.artifacts->items) {
    got += f.path + " " + f.media_type + " " + std::to_string(f.bytes) + ";";
  }
  Expect(got == "out/hi text/plain; charset=utf-8 3;out/plot.txt image/png 8;",
         "artifacts were: " + got);
  Expect(a.artifacts->items[0].sha256 ==
             "98ea6e4f216f2fb4b69fff9b3a44842c38686ca685f3f55dc48c5d3fb1107be4",
         "sha256 of out/hi");
}

void DetachedCodeExec(CheckContext& ctx) {
  NeedRuntime(ctx, "shell");
  ExecStartRequest req;
  req.runtime = Runtime::kShell;
  req.code = "echo \"$0\" detached";
  client::RunResult r = ExpectOk(ctx.client().Run(req), "a detached code exec");
  Expect(r.exit_code == 0 && r.stdout_data == "sh detached\n", "stdout " + r.stdout_data);
}

void HealthReportsTheMechanism(CheckContext& ctx) {
  LimitsInfo l = Limits(ctx);
  Expect(l.mechanism == "cgroup2" || l.mechanism == "cgroup1" || l.mechanism == "rlimit",
         "mechanism \"" + l.mechanism + "\"");
  for (const char* name : {"timeout", "memory", "pids", "cpu", "file_size", "output"}) {
    Expect(std::find(l.supported.begin(), l.supported.end(), name) != l.supported.end(),
           std::string("\"") + name + "\" is not supported");
  }
}

void MemoryLimitKills(CheckContext& ctx) {
  NeedCgroups(ctx);
  NeedRuntime(ctx, "shell");
  // A shell variable that doubles past the limit: no interpreter needed.
  RunRequest r = Shell("x=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa; while :; do x=$x$x; done");
  r.limits.memory_mb = 48;
  RunResponse a = Run(ctx, r, "a memory hog");
  Expect(a.killed_by == "memory", "killed_by " + a.killed_by.value_or("null") + ": " + a.summary);
  Expect(a.summary == "killed: memory limit 48 MiB exceeded", "summary \"" + a.summary + "\"");
}

void PidsLimitEndsForkBomb(CheckContext& ctx) {
  NeedCgroups(ctx);
  NeedRuntime(ctx, "shell");
  RunRequest r = Shell("b(){ b | b & }; b; sleep 30");
  r.limits.pids = 24;
  RunResponse a = Run(ctx, r, "a fork bomb");
  Expect(a.killed_by == "pids", "killed_by " + a.killed_by.value_or("null") + ": " + a.summary);
  Expect(StartsWith(a.summary, "killed: process limit 24 exceeded"), "summary " + a.summary);
}

void CpuLimitKills(CheckContext& ctx) {
  NeedRuntime(ctx, "shell");
  RunRequest r = Shell("while :; do :; done");
  r.limits.cpu_sec = 1;
  RunResponse a = Run(ctx, r, "a busy loop");
  Expect(a.killed_by == "cpu", "killed_by " + a.killed_by.value_or("null") + ": " + a.summary);
  Expect(a.summary == "killed: CPU time limit 1s exceeded", "summary \"" + a.summary + "\"");
}

void FileSizeLimitKills(CheckContext& ctx) {
  NeedRuntime(ctx, "shell");
  RunRequest r = Shell("mkdir -p '" + ctx.Scratch("") + "' && head -c 3000000 /dev/zero > '" +
                       ctx.Scratch("big") + "'");
  r.limits.file_size_mb = 1;
  RunResponse a = Run(ctx, r, "a large write");
  Expect(a.killed_by == "file_size",
         "killed_by " + a.killed_by.value_or("null") + ": " + a.summary);
}

// "disk_bytes" (docs/PROTOCOL.md, "Limits"): a writer four times the size
// of its scratch space is ended by the disk limit, and what it wrote is
// gone with the run: the guest's directory under the tmpfs stays empty.
// Where health does not list "disk", the request is refused instead.
void DiskLimitEndsARunawayWriter(CheckContext& ctx) {
  NeedRuntime(ctx, "shell");
  LimitsInfo limits = Limits(ctx);
  std::string dir = ctx.Scratch("disk");
  Run(ctx, Shell("mkdir -p '" + dir + "'"), "set-up");
  constexpr int64_t kBytes = 1 << 20;
  RunRequest r = Shell("head -c " + std::to_string(4 * kBytes) + " /dev/zero > '" + dir +
                       "/fill'; echo wrote $?");
  r.limits.disk_bytes = kBytes;
  r.limits.disk_path = dir;
  r.scan_changes = false;
  if (!limits.Supports("disk")) {
    Status refused = ExpectErrorStatus(ctx.client().RunCode(r), ErrorCode::kLimitUnsupported,
                                       "a run with disk_bytes where health does not list disk");
    const json::Value* field = refused.details().Find("field");
    Expect(field && field->is_string() && field->as_string() == "disk_bytes",
           "the refusal does not name the field disk_bytes: " + refused.message());
    throw CheckSkipped{"the guest cannot bound a run's disk: " + limits.disk_why};
  }
  RunResponse a = Run(ctx, r, "a writer filling its scratch space");
  Expect(a.killed_by == "disk", "killed_by " + a.killed_by.value_or("null") + ": " + a.summary);
  Expect(a.limit && a.limit->name == "disk" && a.limit->value == kBytes && a.limit->unit == "bytes",
         "the limit object does not name disk, 1048576 bytes");
  Expect(a.summary.find("disk limit 1048576 bytes") != std::string::npos,
         "summary \"" + a.summary + "\"");
  RunResponse left = Run(ctx, Shell("ls -A '" + dir + "'"), "listing the scratch path after");
  Expect(left.exit_code == 0 && left.stdout_text.empty(),
         "the writer reached the guest's disk: " + dir + " holds \"" + left.stdout_text + "\"");
}

void OutputLimitIsGapUnlessKill(CheckContext& ctx) {
  ExecStartRequest gap;
  gap.command = "head -c 100000 /dev/zero";
  gap.limits.output_bytes = 8192;
  client::RunResult a = ExpectOk(ctx.client().Run(gap), "output over output_bytes");
  Expect(a.exit_code == 0 && !a.killed_by, "a retention overflow is not a kill");
  Expect(a.exec.stdout_retained_from >= 100000 - 8192, "the front was released");
  ExecStartRequest kill;
  kill.command = "while :; do echo yes; done";
  kill.timeout_sec = 60;
  kill.limits.output_bytes = 65536;
  kill.limits.kill_on_output = true;
  client::RunResult b = ExpectOk(ctx.client().Run(kill), "output with kill_on_output");
  Expect(b.killed_by == "output", "killed_by " + b.killed_by.value_or("null"));
}

// docs/PROTOCOL.md, "Contexts": a name set by one run is there for the
// next, and each answer carries only its own run's output.
void ContextKeepsANameBetweenRuns(CheckContext& ctx, Runtime runtime, std::string set_code,
                                  std::string get_code) {
  NeedRuntime(ctx, RuntimeName(runtime));
  ContextCreateRequest create;
  create.id = client::MintExecId("conf-ctx");
  create.spec.runtime = runtime;
  create.spec.scan_changes = false;
  ContextInfo info = ExpectOk(ctx.client().CreateContext(create), "creating a context");
  Expect(info.state == "ready", "a new context is " + info.state);
  ContextRunRequest set;
  set.code = std::move(set_code);
  RunResponse a = ExpectOk(ctx.client().RunInContext(create.id, set), "the first context run");
  ContextRunRequest get;
  get.code = std::move(get_code);
  RunResponse b = ExpectOk(ctx.client().RunInContext(create.id, get), "the second context run");
  ContextInfo ended = ExpectOk(ctx.client().DeleteContext(create.id), "deleting the context");
  Expect(a.stdout_text == "set\n", "the first run answered \"" + a.stdout_text + "\"");
  Expect(b.exit_code == 0 && b.stdout_text == "42\n",
         "the second run answered " + b.summary + " with stdout \"" + b.stdout_text + "\"");
  Expect(ended.ended_reason == std::optional<std::string>("deleted"),
         "a deleted context ended as " + ended.ended_reason.value_or("null"));
}

void ContextKeepsAVariableBetweenRuns(CheckContext& ctx) {
  ContextKeepsANameBetweenRuns(ctx, Runtime::kPython, "kept = 41\nprint('set')", "print(kept + 1)");
}

// A ts cell is a module of its own: its top-level declaration must still
// reach the next cell.
void TsContextKeepsADeclarationBetweenRuns(CheckContext& ctx) {
  ContextKeepsANameBetweenRuns(ctx, Runtime::kTs, "let kept: number = 41;\nconsole.log('set')",
                               "console.log(kept + 1)");
}

}  // namespace

void AddRunChecks(std::vector<Check>& checks) {
  checks.push_back(
      {"run", "each advertised runtime runs its code with one argv", EachAdvertisedRuntimeRuns});
  checks.push_back({"run", "a run with network none has only its own loopback",
                    ARunWithoutNetworkHasOnlyItsOwnLoopback});
  checks.push_back(
      {"run", "a runtime the guest lacks is runtime_unavailable", AbsentRuntimeIsRefused});
  checks.push_back({"run", "every runtime is advertised or listed unavailable with a reason",
                    EveryRuntimeIsAdvertisedOrExplained});
  checks.push_back(
      {"run", "a context keeps a variable between two runs", ContextKeepsAVariableBetweenRuns});
  checks.push_back({"run", "a ts context keeps a declaration between two runs",
                    TsContextKeepsADeclarationBetweenRuns});
  checks.push_back({"run", "a python exception is answered with type, line and keys present",
                    PythonExceptionIsStructured});
  checks.push_back({"run", "a result line split across writes is the result, not stdout",
                    ResultLineIsTakenOutOfStdout});
  checks.push_back({"run", "a failure's summary ends with the last line of stderr",
                    FailureSummaryEndsWithLastErrorLine});
  checks.push_back({"run", "a timeout names its limit and timeouts are clamped to 300 s",
                    TimeoutNamesItselfAndIsClamped});
  checks.push_back({"run", "output is bounded at 64 KiB and invalid UTF-8 becomes U+FFFD",
                    OutputIsBoundedAndUtf8});
  checks.push_back({"run", "changed files: added, modified, removed, same-size rewrite",
                    ChangedFilesAreReported});
  checks.push_back({"run", "artifacts: what a run makes in artifacts_dir, typed by content",
                    ArtifactsAreDescribedByContent});
  checks.push_back({"run", "code runs as a detached exec too", DetachedCodeExec});
  checks.push_back({"limits", "health reports the limit mechanism", HealthReportsTheMechanism});
  checks.push_back({"limits", "a memory limit kills and names its value", MemoryLimitKills});
  checks.push_back({"limits", "a pids limit ends a fork bomb", PidsLimitEndsForkBomb});
  checks.push_back({"limits", "a CPU time limit kills and names its value", CpuLimitKills});
  checks.push_back({"limits", "a file size limit names itself", FileSizeLimitKills});
  checks.push_back({"limits", "output over output_bytes is a gap unless kill_on_output",
                    OutputLimitIsGapUnlessKill});
  checks.push_back({"limits",
                    "a disk limit ends a runaway writer and leaves the guest's disk alone",
                    DiskLimitEndsARunawayWriter});
}

}  // namespace agentd::conformance
