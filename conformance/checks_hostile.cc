// Checks of what a hostile command can reach (docs/SECURITY.md, "Children
// cannot reach the daemon's resources"): run as the documented unprivileged
// exec user, it must not signal, trace or read the daemon, find an inherited
// descriptor, or read another exec's output, and what it leaves running must
// end with its exec. The tests' probe (tests/lib/hostile_probe.py) covers
// more with Python; these need only a POSIX shell in the guest.
#include <algorithm>
#include <thread>

#include "checks.h"

namespace agentd::conformance {
namespace {

client::RunResult RunSh(CheckContext& ctx, ExecStartRequest req, std::string_view what) {
  return ExpectOk(ctx.client().Run(std::move(req)), what);
}

// The defenses hold for a root daemon running commands as another user; a
// daemon running as an ordinary user shares its uid with its children.
void NeedRootDaemonAndNobody(CheckContext& ctx) {
  // Children run as the daemon's user unless the request names another.
  client::RunResult id = RunSh(ctx, Sh("id -u"), "asking the daemon's uid");
  if (id.stdout_data != "0\n") {
    throw CheckSkipped{"the daemon does not run as root, so its children share its uid"};
  }
  client::RunResult nobody = RunSh(ctx, Sh("grep -q '^nobody:' /etc/passwd"), "looking up nobody");
  if (nobody.exit_code != 0) throw CheckSkipped{"the guest has no user 'nobody'"};
}

// Who runs the probes: an unprivileged user named by the request, or the
// restricted profile (docs/SECURITY.md, "Restricted execs"), whose defenses
// must hold as well as the plain user's.
enum class Tenant { kNobody, kRestricted };

ExecStartRequest AsTenant(ExecStartRequest req, Tenant tenant) {
  if (tenant == Tenant::kNobody) {
    req.user = "nobody";
  } else {
    req.profile = kProfileRestricted;
  }
  return req;
}

void NeedTenant(CheckContext& ctx, Tenant tenant) {
  NeedRootDaemonAndNobody(ctx);
  if (tenant == Tenant::kNobody) return;
  Result<client::RunResult> r = ctx.client().Run(AsTenant(Sh("true"), tenant));
  if (!r.ok() && (r.status().code() == ErrorCode::kProfileUnsupported ||
                  r.status().code() == ErrorCode::kRestrictedUserUnknown)) {
    throw CheckSkipped{"the guest cannot run restricted execs: " + r.status().message()};
  }
  ExpectOk(std::move(r), "a restricted exec");
}

// Lines of "name=result" written by a probe script.
std::string Field(const std::string& out, const std::string& name) {
  size_t at = out.find(name + "=");
  if (at == std::string::npos) return "(missing)";
  size_t end = out.find('\n', at);
  return out.substr(at + name.size() + 1, end - at - name.size() - 1);
}

void AChildCannotSignalTraceOrReadTheDaemon(CheckContext& ctx, Tenant tenant) {
  NeedTenant(ctx, tenant);
  // $PPID of a shell-mode command is the daemon that forked it. Reading
  // mem, environ and the fd directory all need ptrace access to it.
  ExecStartRequest req =
      Sh("try() { if \"$@\" >/dev/null 2>&1; then echo reached; else echo denied; fi; }\n"
         "echo signal=$(try kill -0 $PPID)\n"
         "echo mem=$(try head -c 1 /proc/$PPID/mem)\n"
         "echo environ=$(try cat /proc/$PPID/environ)\n"
         "echo fds=$(try ls /proc/$PPID/fd/)\n");
  client::RunResult r = RunSh(ctx, AsTenant(req, tenant), "probing the daemon as the tenant");
  for (const char* what : {"signal", "mem", "environ", "fds"}) {
    Expect(
        Field(r.stdout_data, what) == "denied",
        std::string("as the tenant, ") + what + " of the daemon was " + Field(r.stdout_data, what));
  }
  ExpectOk(ctx.client().Health(), "health after the probe");
}

void AChildInheritsOnlyItsThreeStreams(CheckContext& ctx, Tenant tenant) {
  NeedTenant(ctx, tenant);
  // ls (a child of the shell) lists the shell's descriptors: no glob, pipe
  // or command substitution of the shell's own can add one of its own. The
  // "; true" keeps shells that exec their last command from making ls the
  // shell (its directory descriptor would show up).
  client::RunResult r =
      RunSh(ctx, AsTenant(Sh("ls /proc/$$/fd; true"), tenant), "listing inherited descriptors");
  Expect(r.exit_code == 0, "the listing ran: " + r.stderr_data);
  std::vector<std::string> fds;
  for (size_t i = 0; i < r.stdout_data.size();) {
    size_t j = r.stdout_data.find_first_of(" \n", i);
    if (j == std::string::npos) j = r.stdout_data.size();
    if (j > i) fds.push_back(r.stdout_data.substr(i, j - i));
    i = j + 1;
  }
  Expect(fds == std::vector<std::string>{"0", "1", "2"},
         "the child holds descriptors beyond 0-2: " + r.stdout_data);
}

void AChildCannotReadAnotherExecsOutput(CheckContext& ctx, Tenant tenant) {
  NeedTenant(ctx, tenant);
  std::string secret = "conformance-secret-" + ctx.NewId("s");
  std::string victim = ctx.NewId("victim");
  // The victim (root) holds its output open while the thief (nobody) tries
  // the victim's descriptors, which lead to the spool files.
  ExecStartRequest v = Sh("echo " + secret + "; sleep 30");
  ExecInfo vi = ExpectOk(ctx.client().StartExec(victim, v), "starting the victim");
  ExecStartRequest thief = Sh("p=" + std::to_string(vi.pid) +
                              "\n"
                              "ls /proc/$p/fd/ 2>/dev/null\n"
                              "for f in /proc/$p/fd/*; do cat $f 2>/dev/null; done\n"
                              "true");
  client::RunResult r =
      RunSh(ctx, AsTenant(thief, tenant), "looking for the victim's output as the tenant");
  ExpectOk(ctx.client().KillExec(victim), "killing the victim");
  ExpectOk(ctx.client().WaitExec(victim, std::chrono::seconds(30)), "waiting for the victim");
  ExpectOk(ctx.client().AckExec(victim), "acking the victim");
  Expect(r.stdout_data.empty(), "the tenant reached another exec's output: " + r.stdout_data);
}

bool Alive(CheckContext& ctx, const std::string& pid) {
  client::RunResult r = RunSh(ctx, Sh("kill -0 " + pid + " 2>/dev/null"), "checking a pid");
  return r.exit_code == 0;
}

// A killed process is reaped asynchronously (by the daemon as a guest's
// PID 1), and a zombie still answers kill -0: poll for a while.
bool GoneWithin5s(CheckContext& ctx, const std::string& pid) {
  for (int i = 0; i < 50; ++i) {
    if (!Alive(ctx, pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

void WhatAnExecLeavesRunningEndsWithItsAck(CheckContext& ctx, Tenant tenant) {
  NeedTenant(ctx, tenant);
  std::string id = ctx.NewId("leftover");
  client::RunResult r =
      ExpectOk(ctx.client().Run(AsTenant(Sh("sleep 300 >/dev/null 2>&1 & echo $!"), tenant),
                                {.id = id, .ack = false}),
               "an exec that leaves a child behind");
  std::string pid = r.stdout_data.substr(0, r.stdout_data.find('\n'));
  Expect(!pid.empty() && Alive(ctx, pid), "the background child runs after its leader exited");
  ExpectOk(ctx.client().AckExec(id), "acking the exec");
  bool gone = GoneWithin5s(ctx, pid);
  Expect(gone, "pid " + pid + " outlived the ack of its exec");
}

void AKilledExecLeavesNothingRunning(CheckContext& ctx, Tenant tenant) {
  NeedTenant(ctx, tenant);
  std::string id = ctx.NewId("killtree");
  ExecStartRequest req = AsTenant(Sh("sleep 300 & echo $!; sleep 300"), tenant);
  ExpectOk(ctx.client().StartExec(id, req), "starting an exec with a background child");
  std::string pid;
  for (int i = 0; i < 100 && pid.empty(); ++i) {
    client::PollOptions from_start;
    from_start.stdout_from = 0;
    from_start.wait = std::chrono::milliseconds(1000);
    ExecPollResponse out = ExpectOk(ctx.client().PollExec(id, from_start), "polling output");
    std::string data = out.stdout_slice ? out.stdout_slice->data : std::string();
    if (data.find('\n') != std::string::npos) {
      pid = data.substr(0, data.find('\n'));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  Expect(!pid.empty(), "the exec printed its child's pid");
  KillRequest kill;
  kill.grace_sec = 1;
  ExpectOk(ctx.client().KillExec(id, kill), "killing the exec");
  ExpectOk(ctx.client().WaitExec(id, std::chrono::seconds(30)), "waiting for the killed exec");
  bool gone = GoneWithin5s(ctx, pid);
  ExpectOk(ctx.client().AckExec(id), "acking the killed exec");
  Expect(gone, "pid " + pid + " outlived the kill of its exec");
}

// The restricted profile (docs/PROTOCOL.md, "Profiles"): what the daemon
// reports applying, the kernel must show in the child's own status, and a
// mount namespace (which needs no capability once inside a user namespace)
// must be refused.
void ARestrictedExecHasNoPrivilegeAndSaysSo(CheckContext& ctx) {
  NeedRootDaemonAndNobody(ctx);
  ExecStartRequest req =
      Sh("grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status\n"
         "if unshare -Ur true >/dev/null 2>&1; then echo userns=reached; "
         "else echo userns=denied; fi\n"
         "id -u\n");
  req.profile = kProfileRestricted;
  Result<client::RunResult> run = ctx.client().Run(std::move(req));
  if (!run.ok() && run.status().code() == ErrorCode::kProfileUnsupported) {
    throw CheckSkipped{"the guest cannot run restricted execs: " + run.status().message()};
  }
  client::RunResult r = ExpectOk(std::move(run), "a restricted exec");
  Expect(r.exit_code == 0, "the restricted probe ran: " + r.stderr_data);
  Expect(r.exec.profile == kProfileRestricted, "the exec object says profile " + r.exec.profile);
  Expect(r.exec.restriction.has_value(), "the exec object lacks \"restriction\"");
  Expect(r.exec.restriction->uid != 0 && r.exec.restriction->capabilities == "none" &&
             r.exec.restriction->no_new_privs,
         "the restriction reported is not the profile's");
  for (const char* cap : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
    Expect(r.stdout_data.find(std::string(cap) + ":\t0000000000000000") != std::string::npos,
           std::string("the restricted child holds capabilities in ") + cap + ": " + r.stdout_data);
  }
  Expect(r.stdout_data.find("NoNewPrivs:\t1") != std::string::npos, "no_new_privs is not set");
  Expect(r.stdout_data.find("\n" + std::to_string(r.exec.restriction->uid) + "\n") !=
             std::string::npos,
         "the child does not run as the reported uid: " + r.stdout_data);
  if (!r.exec.restriction->seccomp) {
    // The operator's --restricted-without-seccomp on a kernel without
    // filters: the rest held above; the filter's part cannot.
    throw CheckSkipped{"the guest runs restricted execs without a seccomp filter: " +
                       r.exec.restriction->seccomp_why};
  }
  Expect(r.stdout_data.find("Seccomp:\t2") != std::string::npos, "no seccomp filter is loaded");
  Expect(Field(r.stdout_data, "userns") == "denied", "a restricted child created a user namespace");
}

// Read-only paths (docs/SECURITY.md, "Restricted execs"): a file in /etc
// that the tenant's user may write (the control shows it can, unrestricted)
// is refused to a restricted exec, which reports the paths it got.
void ARestrictedExecCannotWriteTheReadonlyPaths(CheckContext& ctx) {
  NeedTenant(ctx, Tenant::kRestricted);
  std::string file = "/etc/agentd-conformance-" + ctx.NewId("ro");
  client::RunResult made =
      RunSh(ctx, Sh("echo before > " + file + " && chmod 0666 " + file), "making " + file);
  if (made.exit_code != 0) {
    throw CheckSkipped{"root cannot write /etc in this guest: " + made.stderr_data};
  }
  auto append = [&](Tenant tenant) {
    return RunSh(ctx, AsTenant(Sh("echo appended >> " + file), tenant), "appending to " + file);
  };
  client::RunResult control = append(Tenant::kNobody);
  client::RunResult restricted = append(Tenant::kRestricted);
  client::RunResult removed = RunSh(ctx, Sh("rm -f " + file), "removing " + file);
  Expect(control.exit_code == 0,
         "nobody, unrestricted, could not append to a 0666 file in /etc "
         "(the control): " +
             control.stderr_data);
  Expect(restricted.exec.restriction.has_value(), "the exec object lacks \"restriction\"");
  const std::vector<std::string>& paths = restricted.exec.restriction->readonly_paths;
  if (std::find(paths.begin(), paths.end(), "/etc") == paths.end()) {
    throw CheckSkipped{
        "the daemon binds no read-only paths here (health's "
        "profiles.restricted.readonly_why says why)"};
  }
  Expect(restricted.exit_code != 0 &&
             restricted.stderr_data.find("Read-only file system") != std::string::npos,
         "a restricted exec appended to " + file + ": exit " +
             std::to_string(restricted.exit_code) + ", " + restricted.stderr_data);
  Expect(removed.exit_code == 0, "cannot remove " + file + ": " + removed.stderr_data);
}

// Egress policy (docs/SECURITY.md, "Egress policy"): under "none" a connect
// to an outside address fails with EPERM at once (a documentation address:
// refused before any route is looked up, so no network is touched), and the
// accounting names it. Skipped with the daemon's reason where no mode works.
void AnExecUnderEgressNoneCannotConnectOut(CheckContext& ctx) {
  HealthResponse h = ExpectOk(ctx.client().Health(), "health");
  const json::Value* limits = h.extra.Find("limits");
  const json::Value* modes = limits ? limits->Find("egress_modes") : nullptr;
  if (!modes || !modes->is_array() || modes->as_array().empty()) {
    const json::Value* why = limits ? limits->Find("egress_why") : nullptr;
    throw CheckSkipped{"the guest enforces no egress policy: " +
                       (why && why->is_string() ? why->as_string() : std::string("not listed"))};
  }
  ExecStartRequest req =
      Sh("if command -v python3 >/dev/null; then python3 -c 'import socket\n"
         "try: socket.create_connection((\"192.0.2.7\", 443), 20); print(\"reached\")\n"
         "except OSError as e: print(e.errno)'; "
         "elif command -v bash >/dev/null; then bash -c 'exec 3<>/dev/tcp/192.0.2.7/443' "
         "2>/dev/null && echo reached || echo refused; "
         "elif command -v nc >/dev/null; then nc -w 2 192.0.2.7 443 </dev/null >/dev/null 2>&1 "
         "&& echo reached || echo refused; else echo no-client; fi");
  req.egress.emplace();
  req.egress->mode = "none";
  client::RunResult r = RunSh(ctx, std::move(req), "a connect under egress none");
  if (r.stdout_data == "no-client\n") {
    throw CheckSkipped{"the guest has neither python3, bash nor nc to open a socket with"};
  }
  Expect(r.stdout_data != "reached\n", "an exec under egress none reached 192.0.2.7:443");
  EgressReport report = ExpectOk(ctx.client().ExecEgress(r.id), "the exec's egress accounting");
  bool named = false;
  for (const EgressDestination& d : report.destinations) {
    named = named || (d.address == "192.0.2.7" && d.port == 443 && d.verdict == "refused");
  }
  Expect(report.accounting && named,
         "the egress accounting does not name the refused connect to 192.0.2.7:443");
}

}  // namespace

void AddHostileChecks(std::vector<Check>& checks) {
  checks.push_back({"hostile", "a restricted exec has no capability, no_new_privs and a filter",
                    ARestrictedExecHasNoPrivilegeAndSaysSo});
  checks.push_back({"hostile", "a restricted exec cannot write the read-only paths",
                    ARestrictedExecCannotWriteTheReadonlyPaths});
  checks.push_back({"hostile", "an exec under egress none cannot connect out, and it is counted",
                    AnExecUnderEgressNoneCannotConnectOut});
  // Each defense against a tenant, as a plain unprivileged user and again
  // under the restricted profile.
  struct TenantCheck {
    const char* as_nobody;
    const char* restricted;
    void (*run)(CheckContext&, Tenant);
  };
  static const TenantCheck kTenantChecks[] = {
      {"a child running as nobody cannot signal, trace or read the daemon",
       "a restricted child cannot signal, trace or read the daemon",
       AChildCannotSignalTraceOrReadTheDaemon},
      {"a child inherits no descriptor beyond its three streams",
       "a restricted child inherits no descriptor beyond its three streams",
       AChildInheritsOnlyItsThreeStreams},
      {"a child running as nobody cannot read another exec's output",
       "a restricted child cannot read another exec's output", AChildCannotReadAnotherExecsOutput},
      {"what an exec leaves running ends when it is acked",
       "what a restricted exec leaves running ends when it is acked",
       WhatAnExecLeavesRunningEndsWithItsAck},
      {"a killed exec leaves nothing running", "a killed restricted exec leaves nothing running",
       AKilledExecLeavesNothingRunning},
  };
  for (const TenantCheck& c : kTenantChecks) {
    checks.push_back(
        {"hostile", c.as_nobody, [run = c.run](CheckContext& ctx) { run(ctx, Tenant::kNobody); }});
    checks.push_back({"hostile", c.restricted,
                      [run = c.run](CheckContext& ctx) { run(ctx, Tenant::kRestricted); }});
  }
}

}  // namespace agentd::conformance
