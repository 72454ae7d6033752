// Checks of upgrade in place (docs/OPERATIONS.md, "Upgrading"): the
// operator names a guest command that upgrades the daemon (`agentd
// --upgrade`, or SIGUSR2 to it), and the group checks that what ran before
// runs on after it: an exec waiting on its streamed stdin finishes with all
// its output, a sleeping exec can be killed, health counts the upgrade and
// a new exec runs. It changes the daemon's binary image, so it runs only
// with --upgrade-command.
#include "agentd/protocol/json.h"

#include "checks.h"
#include "suite.h"

namespace agentd::conformance {
namespace {

int64_t UpgradeCount(CheckContext& ctx, const char* when) {
  HealthResponse h = ExpectOk(ctx.client().Health(), when);
  const json::Value* n = h.extra.Find("upgrades");
  if (n == nullptr || !n->is_int()) {
    throw CheckFailure{std::string("health lacks an integer \"upgrades\" (") + when + ")"};
  }
  return n->as_int();
}

void RunningExecsSurviveAnUpgradeInPlace(CheckContext& ctx) {
  const SuiteOptions& o = ctx.suite().options();
  if (o.upgrade_command.empty()) {
    throw CheckSkipped{
        "changes the daemon's binary image: pass --upgrade-command with a guest command that "
        "upgrades it (agentd --upgrade)"};
  }
  int64_t before = UpgradeCount(ctx, "health before the upgrade");

  std::string waiting = ctx.NewId("upgrade-stdin");
  ExecStartRequest reader = Sh("echo before; read line; echo \"after $line\"");
  reader.stdin_stream = true;
  ExpectOk(ctx.client().StartExec(waiting, std::move(reader)), "the exec waiting on its stdin");
  ExpectOk(ctx.client().WaitForOutput(waiting, "before"), "its first line");
  std::string sleeper = ctx.NewId("upgrade-sleep");
  ExpectOk(ctx.client().StartExec(sleeper, Sh("exec sleep 600")), "a sleeping exec");

  client::RunResult up = ExpectOk(ctx.client().Run(Sh(o.upgrade_command)), "the upgrade command");
  Expect(up.exit_code == 0, "the upgrade command exits 0 (exit " + std::to_string(up.exit_code) +
                                "): " + up.stdout_data + up.stderr_data);
  int64_t after = UpgradeCount(ctx, "health after the upgrade");
  Expect(after == before + 1, "health counts one more upgrade (" + std::to_string(before) +
                                  " before, " + std::to_string(after) + " after)");

  ExpectOk(ctx.client().WriteStdin(waiting, 0, "handed-over\n", true), "stdin after the upgrade");
  ExecInfo done =
      ExpectOk(ctx.client().WaitExec(waiting, std::chrono::seconds(60)), "the waiting exec's exit");
  Expect(done.exit_code && *done.exit_code == 0, "the waiting exec exits 0");
  client::OutputChunk out =
      ExpectOk(ctx.client().ReadOutput(waiting, "stdout"), "the waiting exec's stdout");
  Expect(out.data == "before\nafter handed-over\n",
         "its stdout holds the lines from before and after the upgrade: " + out.data);

  ExpectOk(ctx.client().KillExec(sleeper, KillRequest{"KILL", std::nullopt}),
           "killing the sleeper after the upgrade");
  ExecInfo killed =
      ExpectOk(ctx.client().WaitExec(sleeper, std::chrono::seconds(60)), "the sleeper's exit");
  Expect(killed.signal && *killed.signal == "KILL",
         "the sleeper started before the upgrade ends by the SIGKILL sent after it");
  client::RunResult fresh = ExpectOk(ctx.client().Run(Sh("echo fresh")), "a new exec");
  Expect(fresh.exit_code == 0 && fresh.stdout_data == "fresh\n", "a new exec runs after it");
  for (const std::string& id : {waiting, sleeper}) (void)ctx.client().AckExec(id);
}

}  // namespace

void AddUpgradeChecks(std::vector<Check>& checks) {
  checks.push_back({"upgrade", "running execs survive an upgrade in place",
                    RunningExecsSurviveAnUpgradeInPlace});
}

}  // namespace agentd::conformance
