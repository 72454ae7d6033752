// Checks of the server-side waits (docs/PROTOCOL.md, "Wait for output",
// "Wait for a path").
#include "checks.h"
#include "suite.h"

namespace agentd::conformance {
namespace {

ExecStartRequest ShForWaits(const std::string& script) {
  ExecStartRequest req;
  req.argv = {"/bin/sh", "-c", script};
  return req;
}

void RequireShellForWaits(CheckContext& ctx) {
  client::RunResult r = ExpectOk(ctx.client().Run(ShForWaits("true")), "probing /bin/sh");
  if (r.exit_code != 0) throw CheckSkipped{"the guest has no /bin/sh"};
}

void PutForWaits(CheckContext& ctx, const std::string& path, const std::string& text) {
  client::WriteOptions w;
  w.parents = true;
  ExpectOk(ctx.client().WriteFile(path, text, w), "write " + path);
}

// Kills the exec when the check ends, passed or failed: a leftover running
// exec would make later checks (health's busy) fail.
struct KillAtEnd {
  CheckContext& ctx;
  std::string id;
  ~KillAtEnd() { (void)ctx.client().KillExec(id, KillRequest{"KILL", 0}); }
};

void MatchSplitAcrossChunksIsFound(CheckContext& ctx) {
  RequireShellForWaits(ctx);
  std::string id = ctx.NewId("split");
  std::string marker = ctx.Scratch("split") + "/go";
  ExpectOk(
      ctx.client().StartExec(id, ShForWaits("printf rea; while [ ! -e " + marker +
                                            " ]; do sleep 0.01; done; printf 'dy\\n'; sleep 60")),
      "start");
  KillAtEnd kill_at_end{ctx, id};  // it sleeps on after the match
  // "rea" is in the output, in its own chunk, before the marker exists.
  for (;;) {
    client::PollOptions o;
    o.stdout_from = 0;
    o.wait = std::chrono::milliseconds(10000);
    ExecPollResponse p = ExpectOk(ctx.client().PollExec(id, o), "poll");
    if (p.stdout_slice && p.stdout_slice->next >= 3) break;
  }
  client::WaitForOutputOptions now;
  now.timeout = std::chrono::milliseconds(0);
  ExecPollResponse early = ExpectOk(ctx.client().WaitForOutput(id, "ready", now), "early wait");
  Expect(early.match && !early.match->matched && early.match->reason == "timeout" &&
             early.match->next == 0,
         "half a match: no match yet, resume from its start (0)");
  PutForWaits(ctx, marker, "");
  client::WaitForOutputOptions o;
  o.timeout = std::chrono::milliseconds(60000);
  ExecPollResponse r = ExpectOk(ctx.client().WaitForOutput(id, "re.dy\\n", o), "wait");
  Expect(r.match && r.match->matched, "the match split across two chunks is found");
  Expect(r.match->offset == 0 && r.match->end == 6 && r.match->text == "ready\n",
         "at offset 0 with the text \"ready\\n\", got offset " + std::to_string(r.match->offset));
  Expect(r.exec.running, "the wait woke on the match, not on the exit");
}

void ExitWithoutMatchAnswersExited(CheckContext& ctx) {
  RequireShellForWaits(ctx);
  std::string id = ctx.NewId("nomatch");
  ExpectOk(ctx.client().StartExec(id, ShForWaits("echo hello; exit 2")), "start");
  client::WaitForOutputOptions o;
  o.timeout = std::chrono::milliseconds(60000);
  ExecPollResponse r = ExpectOk(ctx.client().WaitForOutput(id, "goodbye", o), "wait");
  Expect(r.match && !r.match->matched && r.match->reason == "exited",
         "an exec that ends without a match answers \"exited\"");
  Expect(!r.exec.running && r.exec.exit_code == 2, "with the exec's exit");
  ExpectError(ctx.client().WaitForOutput(id, "a(b", o), ErrorCode::kInvalidRequest,
              "a pattern that does not compile");
}

void PathWaitSeesCreationAndRemoval(CheckContext& ctx) {
  std::string path = ctx.Scratch("pathwait") + "/flag";
  Expect(!ExpectOk(ctx.client().WaitForPath(path, false, std::chrono::milliseconds(0)), "wait"),
         "a missing path does not exist");
  PutForWaits(ctx, path, "x");
  Expect(ExpectOk(ctx.client().WaitForPath(path, false, std::chrono::milliseconds(60000)), "wait"),
         "the written path exists");
  ExpectOk(ctx.client().Remove(path, false), "remove");
  Expect(ExpectOk(ctx.client().WaitForPath(path, true, std::chrono::milliseconds(60000)), "wait"),
         "the removed path is gone");
}

}  // namespace

void AddWaitChecks(std::vector<Check>& checks) {
  checks.push_back({"waits", "a pattern split across two output chunks is matched",
                    MatchSplitAcrossChunksIsFound});
  checks.push_back({"waits", "an exec that ends without a match answers exited at once",
                    ExitWithoutMatchAnswersExited});
  checks.push_back(
      {"waits", "a path wait sees a creation and a removal", PathWaitSeesCreationAndRemoval});
}

}  // namespace agentd::conformance
