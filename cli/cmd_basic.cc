// health, bootstrap, reset, version, manifest.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_codes.h"

namespace agentd::cli {

int CmdHealth(Context& ctx) {
  Result<HealthResponse> h = ctx.client().Health();
  if (!h.ok()) return ctx.out().Fail(h.status());
  std::string runtimes;
  for (const std::string& r : h->runtimes) runtimes += (runtimes.empty() ? "" : ", ") + r;
  std::vector<std::vector<std::string>> rows = {{"status", h->status}};
  // A daemon that cannot take work says why (draining, resetting,
  // quarantined, state_dir_unwritable): first, where a person looks.
  if (h->reason) rows.push_back({"reason", *h->reason});
  if (h->errno_name) rows.push_back({"errno", *h->errno_name});
  rows.insert(rows.end(), {
                              {"version", h->version},
                              {"bootstrapped", h->bootstrapped ? "yes" : "no"},
                              {"busy", h->busy ? "yes" : "no"},
                              {"execs", std::to_string(h->execs)},
                              {"uptime", std::to_string(h->uptime_ms / 1000) + " s"},
                              {"runtimes", runtimes.empty() ? "-" : runtimes},
                          });
  // Upgrades in place (docs/OPERATIONS.md, "Upgrade"), from daemons that count them.
  const json::Value* upgrades = h->extra.Find("upgrades");
  const json::Value* failures = h->extra.Find("upgrade_failures");
  if (upgrades && upgrades->is_int() && failures && failures->is_int()) {
    rows.push_back({"upgrades", std::to_string(upgrades->as_int()) + " (" +
                                    std::to_string(failures->as_int()) + " failed)"});
  }
  // Each runtime that cannot run, with why: what a person fixes first.
  for (const RuntimeUnavailable& u : h->runtimes_unavailable) {
    rows.push_back({"unavailable", u.runtime + ": " + u.code + ": " + u.reason});
  }
  std::string human = Output::Table(rows);
  int done = ctx.out().Succeed(EncodeHealthResponse(*h), human);
  // The document is the answer, but a probe (or a script) must see that
  // the daemon cannot serve: a 5xx exit, as for the daemon's other 503s.
  return h->status == "ok" ? done : kExitDaemonError;
}

int CmdBootstrap(Context& ctx) {
  BootstrapRequest req;
  req.token = ctx.globals().token;
  if (req.token.empty()) {
    return ctx.out().UsageError(
        "bootstrap needs the token to set (--token, --token-file or AGENTD_TOKEN)");
  }
  for (const std::string& kv : ctx.args().All("env")) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return ctx.out().UsageError("--env expects K=V, got '" + kv + "'");
    }
    req.env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  Result<BootstrapResponse> r = ctx.client().Bootstrap(req);
  if (!r.ok()) return ctx.out().Fail(r.status());
  return ctx.out().Succeed(
      EncodeBootstrapResponse(*r),
      r->replayed ? "already bootstrapped with this token (replayed)" : "bootstrapped");
}

int CmdReset(Context& ctx) {
  ResetRequest req;
  req.reset_id = ctx.args().Get("id").value_or(client::MintExecId("reset"));
  std::vector<std::string> env = ctx.args().All("env");
  if (std::optional<std::string> file = ctx.args().Get("next-token-file")) {
    std::ifstream in(*file);
    std::stringstream text;
    text << in.rdbuf();
    std::string token = text.str();
    while (!token.empty() &&
           (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
      token.pop_back();
    }
    if (!in || token.empty()) return ctx.out().UsageError("cannot read a token from " + *file);
    req.next = BootstrapRequest{token, {}};
  } else if (!env.empty()) {
    return ctx.out().UsageError(
        "--env sets the next tenant's environment: it needs --next-token-file");
  }
  for (const std::string& kv : env) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return ctx.out().UsageError("--env expects K=V, got '" + kv + "'");
    }
    req.next->env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  Result<ResetReport> r = ctx.client().Reset(req);
  if (!r.ok()) return ctx.out().Fail(r.status());
  std::vector<std::vector<std::string>> rows = {
      {"clean", r->clean ? "yes" : "NO (quarantined)"},
      {"generation", std::to_string(r->generation)},
      {"killed processes", std::to_string(r->killed_processes)},
      {"removed", std::to_string(r->removed_entries) + " entries, " +
                      Output::HumanSize(static_cast<uint64_t>(r->removed_bytes)) + ", " +
                      std::to_string(r->removed_ipc_objects) + " IPC objects"},
      {"duration", std::to_string(r->duration_ms) + " ms"},
      {"privileged generation", r->privileged_generation ? "yes (an exec ran as root)" : "no"}};
  for (const ResetRemaining& item : r->remaining) {
    rows.push_back({"remaining " + item.kind, item.name + ": " + item.reason});
  }
  int code = ctx.out().Succeed(EncodeResetReport(*r), Output::Table(rows));
  return r->clean ? code : kExitFailure;
}

int CmdVersion(Context& ctx) {
  json::Object result;
  result.Set("agentctl", AGENTD_VERSION);
  result.Set("protocol", 1);
  std::string human = "agentctl " + std::string(AGENTD_VERSION) + " (protocol 1)";
  Result<HealthResponse> h = ctx.client().Health();
  if (h.ok()) {
    result.Set("daemon", h->version);
    human += "\nagentd   " + h->version + " at " + ctx.globals().url;
  } else {
    result.Set("daemon", nullptr);
    human += "\nagentd   unreachable at " + ctx.globals().url;
  }
  return ctx.out().Succeed(result, human);
}

int CmdManifest(Context& ctx) {
  auto flags_json = [](const std::vector<FlagSpec>& flags) {
    json::Array out;
    for (const FlagSpec& f : flags) {
      json::Object o;
      o.Set("name", "--" + std::string(f.name));
      o.Set("value", f.metavar.empty() ? json::Value() : json::Value(std::string(f.metavar)));
      o.Set("help", std::string(f.help));
      o.Set("repeatable", f.repeatable);
      out.push_back(std::move(o));
    }
    return out;
  };
  json::Array commands;
  for (const Command& c : Commands()) {
    json::Object o;
    o.Set("name", std::string(c.name));
    o.Set("args", std::string(c.args));
    o.Set("summary", std::string(c.summary));
    o.Set("flags", flags_json(c.flags));
    commands.push_back(std::move(o));
  }
  json::Array exit_codes;
  for (const ExitCodeInfo& e : ExitCodeTable()) {
    json::Object o;
    o.Set("code", e.code);
    o.Set("name", std::string(e.name));
    o.Set("meaning", std::string(e.meaning));
    exit_codes.push_back(std::move(o));
  }
  json::Array error_codes;
  for (ErrorCode code : AllErrorCodes()) {
    json::Object o;
    o.Set("code", std::string(ErrorCodeName(code)));
    o.Set("http_status", HttpStatusFor(code));
    o.Set("exit_code", ExitCodeFor(Status::Error(code, "")));
    error_codes.push_back(std::move(o));
  }
  json::Object manifest;
  manifest.Set("tool", "agentctl");
  manifest.Set("version", AGENTD_VERSION);
  manifest.Set("protocol", 1);
  manifest.Set("global_flags", flags_json(GlobalFlags()));
  manifest.Set("commands", std::move(commands));
  manifest.Set("exit_codes", std::move(exit_codes));
  manifest.Set("remote_exit",
               "exec, run and wait exit with the remote process's code: 0-255, 124 for a "
               "timeout, 128+n for signal n");
  manifest.Set("error_codes", std::move(error_codes));
  // The manifest is machine-readable in both modes.
  std::string text = json::Serialize(manifest);
  if (ctx.out().json()) return ctx.out().Succeed(manifest, "");
  return ctx.out().Succeed(manifest, text);
}

}  // namespace agentd::cli
