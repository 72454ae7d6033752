// Checks of guest reuse (docs/PROTOCOL.md, "Reuse"): a reset between two
// tenants leaves the second no trace of the first. Destructive (it ends
// every process and drops every exec record), so the group runs last and
// only when the operator names a reset path of the guest (--reuse-path).
// Its last check leaves the guest quarantined until it restarts, so it
// also needs --reuse-quarantine.
#include <random>

#include "agentd/protocol/json.h"

#include "checks.h"
#include "suite.h"

namespace agentd::conformance {
namespace {

std::string RandomHex(size_t n) {
  std::random_device rd;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s += kHex[rd() % 16];
  return s;
}

const SuiteOptions& RequireReusePath(CheckContext& ctx) {
  const SuiteOptions& o = ctx.suite().options();
  if (o.reuse_path.empty()) {
    throw CheckSkipped{"destructive: pass --reuse-path with a reset path of the guest"};
  }
  return o;
}

// `script` with the canary split in two variables, so no command line of
// the check itself contains the canary: only what tenant A left can.
ExecStartRequest WithCanary(CheckContext& ctx, const std::string& canary,
                            const std::string& script) {
  ExecStartRequest req = Sh(script);
  req.env.emplace_back("CA", canary.substr(0, canary.size() / 2));
  req.env.emplace_back("CB", canary.substr(canary.size() / 2));
  const SuiteOptions& o = ctx.suite().options();
  req.env.emplace_back("P", o.reuse_path);
  req.env.emplace_back("S", o.reuse_scratch);
  return req;
}

// Tenant A: a canary in the reset path (its name and contents), in the
// scratch dir, and in a file unlinked while a setsid'd shell that ignores
// SIGTERM holds it open (its command line carries the canary too) with a
// sleeping child, both running before tenant A ends (a fifo says so: the
// reset must find two processes, not a shell that has not forked yet);
// with python3, a double-forked listener; with --reuse-ipc, a SysV segment.
// Prints "inode N", "port N" and "shm N" lines for what it made.
constexpr const char* kTenantA = R"(set -e
c="$CA$CB"
mkdir -p "$P/$c.d"
printf '%s\n' "$c" > "$P/$c.d/$c.txt"
set -- $(ls -i "$P/$c.d/$c.txt")
echo "inode $1"
if [ -n "$S" ]; then printf '%s\n' "$c" > "$S/$c"; fi
mkfifo "$P/up-$c"
setsid sh -c 'trap "" TERM; exec 3>"$0"; printf "%s\n" "$1" >&3; rm "$0"; sleep 1000 & echo up >"$2"; while :; do wait; sleep 1000; done' "$P/held-$c" "$c" "$P/up-$c" </dev/null >/dev/null 2>&1 &
read -r _ <"$P/up-$c"
rm "$P/up-$c"
if command -v python3 >/dev/null; then
  python3 -c '
import os, socket, sys, time
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2): os.dup2(null, fd)
        s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
        os.write(w, b"port %d\n" % s.getsockname()[1])
        while True: time.sleep(1000)
    os._exit(0)
sys.stdout.write(os.read(r, 64).decode())' "$c"
fi
if [ "$IPC" = 1 ]; then ipcmk -M 4096 | sed -n 's/.*: *\([0-9]*\)$/shm \1/p'; fi
)";

// Tenant B looks for the canary everywhere it could be, printing what it
// finds; nothing printed is the pass.
constexpr const char* kTenantB = R"(
c="$CA$CB"
find "$P" ${S:+"$S"} -name "*$c*" 2>/dev/null | sed 's/^/name: /'
grep -rlF "$c" "$P" ${S:+"$S"} 2>/dev/null | sed 's/^/content: /'
if [ -n "$INODE" ]; then
  find "$P" -xdev -inum "$INODE" -exec grep -lF "$c" {} + 2>/dev/null | sed 's/^/inode: /'
fi
for p in /proc/[0-9]*; do
  if tr '\0' ' ' < "$p/cmdline" 2>/dev/null | grep -qF "$c"; then echo "process: $p"; fi
done
if [ -n "$SHM" ] && grep -q "^ *[-0-9]* *$SHM " /proc/sysvipc/shm 2>/dev/null; then
  echo "ipc: shm $SHM"
fi
true
)";

std::string LeftoverField(const std::string& out, const std::string& key) {
  size_t at = out.find(key + " ");
  if (at == std::string::npos) return {};
  size_t end = out.find('\n', at);
  return out.substr(at + key.size() + 1, end - at - key.size() - 1);
}

void NextTenantFindsNoTrace(CheckContext& ctx) {
  const SuiteOptions& o = RequireReusePath(ctx);
  std::string canary = "cn" + RandomHex(30);
  ExecStartRequest tenant_a = WithCanary(ctx, canary, kTenantA);
  tenant_a.env.emplace_back("IPC", o.reuse_ipc ? "1" : "0");
  client::RunResult a = ExpectOk(ctx.client().Run(tenant_a), "tenant A");
  if (a.exit_code != 0) {
    throw CheckFailure{"tenant A could not leave its traces (exit " + std::to_string(a.exit_code) +
                       "): " + a.stderr_data};
  }
  std::string inode = LeftoverField(a.stdout_data, "inode");
  std::string port = LeftoverField(a.stdout_data, "port");
  std::string shm = LeftoverField(a.stdout_data, "shm");
  Expect(!o.reuse_ipc || !shm.empty(), "tenant A made a SysV segment (ipcmk)");

  ResetRequest reset;
  reset.reset_id = ctx.NewId("reset");
  std::string next = RandomHex(40);
  reset.next = BootstrapRequest{next, {}};
  ResetReport report = ExpectOk(ctx.client().Reset(reset), "reset");
  std::string left;
  for (const ResetRemaining& r : report.remaining) left += " " + r.kind + " " + r.name;
  Expect(report.clean, "the reset is clean; remaining:" + left);
  Expect(report.killed_processes >= 2,
         "the reset killed tenant A's leftovers (" + std::to_string(report.killed_processes) + ")");
  Expect(!o.reuse_ipc || report.removed_ipc_objects >= 1, "the reset removed the SysV segment");
  ctx.client().SetToken(next);

  std::vector<ExecInfo> execs = ExpectOk(ctx.client().ListExecs(), "list execs");
  Expect(execs.empty(), "tenant B sees none of tenant A's execs");
  if (!port.empty()) {
    for (const client::GuestPort& p : ExpectOk(ctx.client().ListPorts(), "list ports")) {
      Expect(std::to_string(p.port) != port, "tenant A's listener on port " + port + " is gone");
    }
  }
  client::SearchOptions search;
  search.fixed = true;
  search.walk.hidden = true;
  search.walk.gitignore = false;
  client::SearchResult found =
      ExpectOk(ctx.client().Search(o.reuse_path, canary, search), "search");
  Expect(found.matches.empty(), "a content search of the reset path finds no canary");
  ExecStartRequest look = WithCanary(ctx, canary, kTenantB);
  look.env.emplace_back("INODE", inode);
  look.env.emplace_back("SHM", shm);
  client::RunResult b = ExpectOk(ctx.client().Run(look), "tenant B's look");
  Expect(b.exit_code == 0 && b.stdout_data.empty(),
         "tenant B finds no canary by name, content, inode, process or IPC list: " + b.stdout_data +
             b.stderr_data);
}

bool PrivilegedGeneration(CheckContext& ctx, const char* when) {
  HealthResponse h = ExpectOk(ctx.client().Health(), when);
  const json::Value* p = h.extra.Find("privileged_generation");
  if (p == nullptr || !p->is_bool()) {
    throw CheckFailure{std::string("health lacks a boolean \"privileged_generation\" (") + when +
                       ")"};
  }
  return p->as_bool();
}

// Reuse is honest about root (docs/PROTOCOL.md, "Reuse"): a generation in
// which any exec ran unrestricted as root says so in health and in the
// reset report, since no reset of the declared paths proves away what root
// could have written elsewhere; the next generation starts clear, and a
// restricted exec does not set it.
void ARootExecMarksTheGenerationPrivilegedUntilTheReset(CheckContext& ctx) {
  RequireReusePath(ctx);
  client::RunResult id = ExpectOk(ctx.client().Run(Sh("id -u")), "asking the exec's uid");
  if (id.stdout_data != "0\n") {
    throw CheckSkipped{"the guest's execs do not run as root (uid " + id.stdout_data + ")"};
  }
  Expect(PrivilegedGeneration(ctx, "health after a root exec"),
         "health says privileged_generation after an exec ran as root");

  ResetRequest reset;
  reset.reset_id = ctx.NewId("privileged");
  std::string next = RandomHex(40);
  reset.next = BootstrapRequest{next, {}};
  ResetReport report = ExpectOk(ctx.client().Reset(reset), "reset");
  ctx.client().SetToken(next);
  Expect(report.privileged_generation, "the reset report says the generation was privileged");
  Expect(!PrivilegedGeneration(ctx, "health after the reset"),
         "the next generation starts without privileged_generation");

  ExecStartRequest restricted = Sh("true");
  restricted.profile = kProfileRestricted;
  Result<client::RunResult> r = ctx.client().Run(std::move(restricted));
  if (!r.ok() && (r.status().code() == ErrorCode::kProfileUnsupported ||
                  r.status().code() == ErrorCode::kRestrictedUserUnknown)) {
    return;  // the part above stands; this guest has no restricted execs to try
  }
  Expect(ExpectOk(std::move(r), "a restricted exec").exit_code == 0, "the restricted exec ran");
  Expect(!PrivilegedGeneration(ctx, "health after a restricted exec"),
         "a restricted exec leaves privileged_generation false");
}

// Also hands the guest back its original token (the suite's), so the
// operator's token works again after the destructive group.
void RetriedResetAnswersTheRecordedReport(CheckContext& ctx) {
  const SuiteOptions& o = RequireReusePath(ctx);
  ResetRequest reset;
  reset.reset_id = ctx.NewId("retried");
  reset.next = BootstrapRequest{o.client.token, {}};
  ResetReport first = ExpectOk(ctx.client().Reset(reset), "reset");
  Expect(first.clean && !first.replayed, "the first attempt resets");
  // The allocator lost the answer and retries with the token it had.
  ResetReport again = ExpectOk(ctx.client().Reset(reset), "retry with the retired token");
  Expect(again.replayed && again.generation == first.generation,
         "a retry answers the recorded report and resets nothing");
  ctx.client().SetToken(o.client.token);
  Expect(ExpectOk(ctx.client().ListExecs(), "list execs").empty(), "the next token is in force");
}

// Tenant A makes a file in the reset path that the reset cannot remove: the
// immutable flag (chattr +i) stops even root's unlink until it is cleared,
// and a reset never clears it. Exit 3 and chattr's words when the guest
// cannot (not root, or a file system without the flag: tmpfs, overlayfs).
constexpr const char* kUnremovable = R"(
f="$P/stuck-$CA$CB"
printf 'tenant A\n' > "$f" || exit 3
if ! out=$(chattr +i "$f" 2>&1); then rm -f "$f"; echo "chattr +i: $out"; exit 3; fi
echo "$f"
)";

// The status code and the JSON body of one raw answer.
std::pair<int, json::Value> RawJson(CheckContext& ctx, const std::string& request) {
  std::string raw = ctx.RawExchange(request, std::chrono::seconds(5));
  int status = raw.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(raw.c_str() + 9) : 0;
  size_t body = raw.find("\r\n\r\n");
  Result<json::Value> doc = json::Parse(body == std::string::npos ? "" : raw.substr(body + 4));
  return {status, doc.ok() ? std::move(*doc) : json::Value()};
}

void UncleanableGuestIsQuarantined(CheckContext& ctx) {
  const SuiteOptions& o = RequireReusePath(ctx);
  if (!o.reuse_quarantine) {
    throw CheckSkipped{"leaves the guest quarantined until it restarts: pass --reuse-quarantine"};
  }
  std::string canary = "cn" + RandomHex(30);
  client::RunResult a =
      ExpectOk(ctx.client().Run(WithCanary(ctx, canary, kUnremovable)), "tenant A");
  if (a.exit_code == 3) {
    throw CheckSkipped{"the guest cannot make an unremovable file: " + a.stdout_data};
  }
  Expect(a.exit_code == 0, "tenant A made its immutable file: " + a.stderr_data);
  std::string stuck = a.stdout_data.substr(0, a.stdout_data.find('\n'));

  ResetRequest reset;
  reset.reset_id = ctx.NewId("quarantine");
  reset.next = BootstrapRequest{RandomHex(40), {}};
  ResetReport report = ExpectOk(ctx.client().Reset(reset), "reset");
  Expect(!report.clean, "a reset that cannot remove " + stuck + " is not clean");
  bool named = false;
  for (const ResetRemaining& r : report.remaining) {
    named = named || (r.kind == "path" && r.name.find("stuck-" + canary) != std::string::npos);
  }
  Expect(named, "the report names the file it could not remove");

  auto [status, health] =
      RawJson(ctx, "GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  Expect(status == 503, "health answers 503, got " + std::to_string(status));
  const json::Value* state = health.is_object() ? health.as_object().Find("state") : nullptr;
  Expect(state && state->is_string() && state->as_string() == "quarantined",
         "health says \"state\": \"quarantined\"");
  const json::Value* remaining = health.as_object().Find("remaining");
  Expect(remaining && json::Serialize(*remaining).find("stuck-" + canary) != std::string::npos,
         "health names the file among what remained");

  ExpectError(ctx.client().StartExec(ctx.NewId("after"), Sh("true")), ErrorCode::kQuarantined,
              "the next start");
  ResetRequest again;
  again.reset_id = ctx.NewId("handed-on");
  again.next = BootstrapRequest{RandomHex(40), {}};
  ExpectError(ctx.client().Reset(again), ErrorCode::kQuarantined,
              "another reset that would hand the guest on");
}

}  // namespace

void AddReuseChecks(std::vector<Check>& checks) {
  checks.push_back({"reuse", "after a reset the next tenant finds no trace of the last",
                    NextTenantFindsNoTrace});
  checks.push_back({"reuse", "a root exec marks the generation privileged until the reset",
                    ARootExecMarksTheGenerationPrivilegedUntilTheReset});
  checks.push_back({"reuse", "a retried reset answers the recorded report",
                    RetriedResetAnswersTheRecordedReport});
  // Last: the guest is quarantined after it.
  checks.push_back({"reuse",
                    "a guest the reset cannot clean is quarantined and refuses the next start",
                    UncleanableGuestIsQuarantined});
}

}  // namespace agentd::conformance
