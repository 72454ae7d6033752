// Checks of exec (docs/PROTOCOL.md, "Exec"): idempotent start, the exec
// object, process control, timeouts, kill, stdin, env, identity.
#include <asio.hpp>
#include <set>

#include "checks.h"

namespace agentd::conformance {
namespace {

client::RunResult RunSh(CheckContext& ctx, std::string command, std::string_view what) {
  return ExpectOk(ctx.client().Run(Sh(std::move(command))), what);
}

void NeedShell(CheckContext& ctx) {
  ExecStartRequest probe;
  probe.argv = {"/bin/sh", "-c", "true"};
  client::RunResult r = ExpectOk(ctx.client().Run(probe), "probing /bin/sh");
  if (r.exit_code != 0) throw CheckSkipped{"the guest has no /bin/sh"};
}

void EightWayRaceStartsOneProcess(CheckContext& ctx) {
  NeedShell(ctx);
  std::string id = ctx.NewId("race");
  std::string marker = "/tmp/" + id + ".runs";
  ExecStartRequest req = Sh("echo run >> " + marker + "; sleep 0.2");
  asio::io_context io;
  client::AsyncClient c(io.get_executor(), ctx.options());
  std::vector<Result<ExecInfo>> results;
  for (int i = 0; i < 8; ++i) {
    c.AsyncStartExec(id, req, [&](Result<ExecInfo> r) { results.push_back(std::move(r)); });
  }
  io.run();
  std::set<int64_t> pids;
  for (auto& r : results) pids.insert(ExpectOk(std::move(r), "a racing start").pid);
  Expect(pids.size() == 1, "eight racing starts answered " + std::to_string(pids.size()) + " pids");
  ExpectOk(ctx.client().WaitExec(id, std::chrono::seconds(30)), "waiting for the exec");
  client::RunResult count = RunSh(ctx, "wc -l < " + marker + "; rm -f " + marker, "counting runs");
  Expect(count.stdout_data == "1\n", "the command ran " + count.stdout_data + " times");
}

void SameIdSameRequestAnswersSameExec(CheckContext& ctx) {
  std::string id = ctx.NewId("same");
  ExecStartRequest req;
  req.argv = {"true"};
  ExecInfo a = ExpectOk(ctx.client().StartExec(id, req), "first start");
  // The same meaning with keys in another order is still identical.
  ExecInfo b = ExpectOk(ctx.client().StartExec(id, req), "repeated start");
  Expect(a.pid == b.pid && a.started_at == b.started_at, "a repeat answers the same exec");
}

void StartAndWaitAnswersExitAndOutput(CheckContext& ctx) {
  NeedShell(ctx);
  std::string id = ctx.NewId("startwait");
  ExecStartRequest req = Sh("echo out; echo err >&2; exit 3");
  client::PollOptions o;
  o.stdout_from = 0;
  o.stderr_from = 0;
  o.wait = std::chrono::seconds(30);
  o.until_exit = true;
  ExecPollResponse r = ExpectOk(ctx.client().StartExecAndWait(id, req, o), "start and wait");
  Expect(!r.exec.running && r.exec.exit_code == 3, "the one answer carries the exit (3)");
  Expect(r.stdout_slice && r.stdout_slice->data == "out\n" && r.stderr_slice &&
             r.stderr_slice->data == "err\n",
         "the one answer carries both streams");
  ExecPollResponse again = ExpectOk(ctx.client().StartExecAndWait(id, req, o), "the same again");
  Expect(again.exec.pid == r.exec.pid && again.exec.started_at == r.exec.started_at,
         "a retry of a start that waits is the same exec");
}

void SameIdDifferentRequestConflicts(CheckContext& ctx) {
  std::string id = ctx.NewId("conflict");
  ExecStartRequest one, two;
  one.argv = {"true"};
  two.argv = {"false"};
  ExpectOk(ctx.client().StartExec(id, one), "first start");
  ExpectError(ctx.client().StartExec(id, two), ErrorCode::kExecIdConflict, "a different request");
}

void BadIdsAndBodiesAreRefused(CheckContext& ctx) {
  ExecStartRequest ok;
  ok.argv = {"true"};
  ExpectError(ctx.client().StartExec(std::string(129, 'a'), ok), ErrorCode::kInvalidRequest,
              "a 129-character id");
  std::string body = R"({"argv":["true"],"command":"true"})";
  std::string raw = ctx.RawExchange(
      "PUT /v1/execs/" + ctx.NewId("both") + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
          ctx.options().token + "\r\nContent-Length: " + std::to_string(body.size()) +
          "\r\nConnection: close\r\n\r\n" + body,
      std::chrono::seconds(5));
  Expect(raw.find("HTTP/1.1 400") == 0 && raw.find("invalid_request") != std::string::npos,
         "both argv and command is 400 invalid_request");
}

void SpawnFailuresAre127And126(CheckContext& ctx) {
  ExecStartRequest missing;
  missing.argv = {"/nonexistent/agentd-conformance-program"};
  client::RunResult r = ExpectOk(ctx.client().Run(missing), "running a missing program");
  Expect(r.exit_code == 127, "a missing program exits 127, got " + std::to_string(r.exit_code));
  Expect(r.exec.error.has_value() && !r.stderr_data.empty(), "the reason is in error and stderr");
  NeedShell(ctx);
  std::string path = "/tmp/" + ctx.NewId("noexec");
  RunSh(ctx, "printf 'data' > " + path + "; chmod 644 " + path, "creating a plain file");
  ExecStartRequest plain;
  plain.argv = {path};
  client::RunResult p = ExpectOk(ctx.client().Run(plain), "running a non-executable file");
  RunSh(ctx, "rm -f " + path, "cleanup");
  Expect(p.exit_code == 126, "a non-executable file exits 126, got " + std::to_string(p.exit_code));
}

void SignalDeathIs128PlusN(CheckContext& ctx) {
  NeedShell(ctx);
  client::RunResult r = RunSh(ctx, "kill -TERM $$", "a self-terminating shell");
  Expect(r.exit_code == 143 && r.signal == "TERM",
         "death by TERM is exit 143 with signal TERM, got " + std::to_string(r.exit_code));
}

void TimeoutIs124KeepsOutputKillsGroup(CheckContext& ctx) {
  NeedShell(ctx);
  ExecStartRequest req = Sh("sleep 300 & echo child=$!; echo before-timeout; wait");
  req.timeout_sec = 1;
  req.kill_grace_sec = 1;
  client::RunResult r = ExpectOk(ctx.client().Run(req), "a command that outlives its timeout");
  Expect(r.exit_code == 124 && r.timed_out && r.killed_by == "timeout",
         "a timeout is exit 124, timed_out, killed_by timeout; got " + std::to_string(r.exit_code));
  Expect(r.stdout_data.find("before-timeout") != std::string::npos,
         "output produced before the timeout is kept");
  size_t at = r.stdout_data.find("child=");
  Expect(at != std::string::npos, "the background child's pid was printed");
  std::string pid = r.stdout_data.substr(at + 6, r.stdout_data.find('\n', at) - at - 6);
  // A killed orphan is a zombie until its reaper (the daemon, as PID 1 of a
  // guest) collects it, and kill -0 still finds a zombie: allow it 3 s.
  client::RunResult alive =
      RunSh(ctx,
            "i=0; while [ $i -lt 30 ]; do kill -0 " + pid +
                " 2>/dev/null || { echo gone; exit; }; sleep 0.1; i=$((i+1)); done; "
                "echo alive",
            "checking the grandchild");
  Expect(alive.stdout_data == "gone\n", "the background child in the group died with it");
}

void KillEscalatesToKillAfterGrace(CheckContext& ctx) {
  NeedShell(ctx);
  std::string id = ctx.NewId("stubborn");
  ExpectOk(ctx.client().StartExec(id, Sh("trap '' TERM; echo ready; while :; do sleep 1; done")),
           "starting a TERM-ignoring command");
  client::PollOptions o;
  o.stdout_from = 0;
  o.wait = std::chrono::milliseconds(5000);
  ExpectOk(ctx.client().PollExec(id, o), "waiting for it to be ready");
  KillRequest k;
  k.signal = "TERM";
  k.grace_sec = 1;
  ExecInfo killed = ExpectOk(ctx.client().KillExec(id, k), "kill");
  Expect(killed.killed_by == "kill", "kill answers killed_by kill");
  ExecInfo done = ExpectOk(ctx.client().WaitExec(id, std::chrono::seconds(30)), "waiting");
  Expect(done.signal == "KILL" && done.exit_code == 137,
         "a TERM-ignoring command ends by KILL after the grace");
}

void StdinByOffsetIsRetrySafe(CheckContext& ctx) {
  std::string id = ctx.NewId("stdin");
  ExecStartRequest req;
  req.argv = {"cat"};
  req.stdin_stream = true;
  ExpectOk(ctx.client().StartExec(id, req), "start with stdin_stream");
  uint64_t n = ExpectOk(ctx.client().WriteStdin(id, 0, "abc"), "write at 0");
  Expect(n == 3, "next offset after 3 bytes is 3");
  n = ExpectOk(ctx.client().WriteStdin(id, 0, "abcdef"), "a retry overlapping the first write");
  Expect(n == 6, "only the new bytes are taken");
  ExpectError(ctx.client().WriteStdin(id, 10, "x"), ErrorCode::kStdinOffsetMismatch,
              "a write past the offset");
  ExpectOk(ctx.client().WriteStdin(id, 6, "", true), "end of input");
  std::string out;
  client::StreamCallbacks cb;
  cb.on_stdout = [&](uint64_t, std::string_view b) { out.append(b); };
  ExpectOk(ctx.client().Stream(id, {}, cb), "reading the output");
  Expect(out == "abcdef", "stdin arrived once, in order: got \"" + out + "\"");
}

void WholeStdinIsDelivered(CheckContext& ctx) {
  ExecStartRequest req;
  req.argv = {"cat"};
  req.stdin_data = std::string("bytes\0and\xff more", 15);
  req.stdin_was_b64 = true;
  client::RunResult r = ExpectOk(ctx.client().Run(req), "cat with stdin_b64");
  Expect(r.stdout_data == *req.stdin_data, "binary stdin comes back byte for byte");
}

void EnvRequestWinsNullUnsetsAgentdStripped(CheckContext& ctx) {
  NeedShell(ctx);
  ExecStartRequest req = Sh("env");
  req.env = {{"CONFORMANCE_SET", std::string("request")},
             {"PATH", std::string("/usr/bin:/bin")},
             {"HOME", std::nullopt}};
  client::RunResult r = ExpectOk(ctx.client().Run(req), "env with overlays");
  const std::string& env = r.stdout_data;
  Expect(env.find("CONFORMANCE_SET=request\n") != std::string::npos, "a request variable is set");
  Expect(env.find("PATH=/usr/bin:/bin\n") != std::string::npos, "the request wins on a shared key");
  Expect(env.find("\nHOME=") == std::string::npos && env.rfind("HOME=", 0) != 0,
         "a null value unsets the variable");
  Expect(env.find("AGENTD_") == std::string::npos, "no AGENTD_* variable reaches the child");
}

void TokenNeverReachesAChild(CheckContext& ctx) {
  NeedShell(ctx);
  const std::string& token = ctx.options().token;
  // The child's own environment and argv, and its parent's (the daemon),
  // as far as the child can read them.
  ExecStartRequest req =
      Sh("for p in self $PPID; do cat /proc/$p/environ /proc/$p/cmdline 2>/dev/null; echo; done");
  client::RunResult r = ExpectOk(ctx.client().Run(req), "reading environ and cmdline");
  Expect(!r.stdout_data.empty(), "the guest's /proc was readable");
  Expect(r.stdout_data.find(token) == std::string::npos,
         "the token appears neither in the child's nor in the daemon's environment or argv");
}

void UserAndHomeFollowPasswd(CheckContext& ctx) {
  NeedShell(ctx);
  client::RunResult who = RunSh(ctx, "grep '^nobody:' /etc/passwd", "looking up nobody");
  if (who.exit_code != 0) throw CheckSkipped{"the guest has no user 'nobody'"};
  std::string line = who.stdout_data;
  std::vector<std::string> fields;
  for (size_t i = 0, j; i <= line.size(); i = j + 1) {
    j = line.find_first_of(":\n", i);
    if (j == std::string::npos) j = line.size();
    fields.push_back(line.substr(i, j - i));
  }
  ExecStartRequest req = Sh("id -u; echo $HOME; echo $USER; echo $LOGNAME");
  req.user = "nobody";
  client::RunResult r = ExpectOk(ctx.client().Run(req), "running as nobody");
  Expect(r.exit_code == 0, "running as nobody exits 0: " + r.stderr_data);
  std::string want = fields[2] + "\n" + fields[5] + "\nnobody\nnobody\n";
  Expect(r.stdout_data == want, "uid, HOME, USER, LOGNAME follow passwd: got " + r.stdout_data);
  ExecStartRequest bad = Sh("true");
  bad.user = "no-such-user-agentd";
  ExpectError(ctx.client().StartExec(ctx.NewId("nouser"), bad), ErrorCode::kUnknownUser,
              "an unknown user");
}

void CwdIsHonoured(CheckContext& ctx) {
  NeedShell(ctx);
  ExecStartRequest req = Sh("pwd");
  req.cwd = "/";
  client::RunResult r = ExpectOk(ctx.client().Run(req), "pwd in /");
  Expect(r.stdout_data == "/\n", "cwd / gives pwd /, got " + r.stdout_data);
}

}  // namespace

void AddExecChecks(std::vector<Check>& checks) {
  checks.push_back(
      {"exec", "eight racing starts with one id run one process", EightWayRaceStartsOneProcess});
  checks.push_back({"exec", "a repeated start with the same request answers the same exec",
                    SameIdSameRequestAnswersSameExec});
  checks.push_back({"exec", "a start that waits answers the exit and both streams at once",
                    StartAndWaitAnswersExitAndOutput});
  checks.push_back({"exec", "the same id with a different request is exec_id_conflict",
                    SameIdDifferentRequestConflicts});
  checks.push_back(
      {"exec", "bad ids and bodies are refused with invalid_request", BadIdsAndBodiesAreRefused});
  checks.push_back(
      {"exec", "spawn failures exit 127 and 126 with the reason", SpawnFailuresAre127And126});
  checks.push_back(
      {"exec", "death by a signal is 128+n with the signal named", SignalDeathIs128PlusN});
  checks.push_back({"exec", "a timeout is 124, keeps earlier output and kills the whole group",
                    TimeoutIs124KeepsOutputKillsGroup});
  checks.push_back(
      {"exec", "kill escalates to KILL after the grace", KillEscalatesToKillAfterGrace});
  checks.push_back({"exec", "stdin by offset takes each byte once", StdinByOffsetIsRetrySafe});
  checks.push_back(
      {"exec", "whole binary stdin is delivered byte for byte", WholeStdinIsDelivered});
  checks.push_back({"exec", "request env wins, null unsets, AGENTD_* never reaches a child",
                    EnvRequestWinsNullUnsetsAgentdStripped});
  checks.push_back({"exec", "the token never reaches a child", TokenNeverReachesAChild});
  checks.push_back(
      {"exec", "user sets uid and HOME, USER, LOGNAME from passwd", UserAndHomeFollowPasswd});
  checks.push_back({"exec", "cwd is honoured", CwdIsHonoured});
}

}  // namespace agentd::conformance
