#include "exec_format.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>

namespace agentd::cli {
namespace {

Status Usage(std::string message) {
  return Status::InvalidRequest(std::move(message)).With("usage", true);
}

Result<int64_t> Seconds(const std::string& text, std::string_view flag) {
  int64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 0) {
    return Usage("--" + std::string(flag) + " needs a whole number of seconds, got '" + text + "'");
  }
  return n;
}

}  // namespace

Result<std::optional<EgressPolicy>> EgressFromArgs(const ParsedArgs& args) {
  std::vector<std::string> allow = args.All("allow");
  std::vector<std::string> deny = args.All("deny");
  bool dns = args.Has("dns");
  std::optional<std::string> mode = args.Get("egress");
  if (!mode) {
    if (!allow.empty() || !deny.empty() || dns) {
      return Usage("--allow, --deny and --dns need --egress MODE");
    }
    return std::optional<EgressPolicy>();
  }
  EgressPolicy p;
  p.mode = *mode;
  p.allow = std::move(allow);
  p.deny = std::move(deny);
  p.dns = dns;
  return std::optional<EgressPolicy>(std::move(p));
}

Result<ExecStartRequest> StartRequestFromArgs(const ParsedArgs& args) {
  ExecStartRequest req;
  if (std::optional<std::string> shell = args.Get("shell")) {
    if (!args.positional.empty())
      return Usage("give either --shell 'CMD' or -- CMD ARGS..., not both");
    req.command = *shell;
  } else {
    if (args.positional.empty())
      return Usage("no command given: use -- CMD ARGS... or --shell 'CMD'");
    req.argv = args.positional;
  }
  for (const std::string& kv : args.All("env")) {
    size_t eq = kv.find('=');
    if (eq == 0 || eq == std::string::npos) return Usage("--env expects K=V, got '" + kv + "'");
    req.env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  for (const std::string& name : args.All("unset")) req.env.emplace_back(name, std::nullopt);
  req.user = args.Get("user");
  req.group = args.Get("group");
  req.profile = args.Get("profile");
  if (req.profile && *req.profile != kProfileRestricted && *req.profile != kProfileUnrestricted) {
    return Usage("--profile is restricted or unrestricted, got '" + *req.profile + "'");
  }
  req.network = args.Get("network");
  if (req.network && *req.network != kNetworkNone) {
    return Usage("--network takes only none, got '" + *req.network + "'");
  }
  Result<std::optional<EgressPolicy>> egress = EgressFromArgs(args);
  if (!egress.ok()) return egress.status();
  req.egress = std::move(*egress);
  req.cwd = args.Get("cwd");
  if (auto t = args.Get("timeout")) {
    Result<int64_t> n = Seconds(*t, "timeout");
    if (!n.ok()) return n.status();
    if (*n > 0) req.timeout_sec = *n;
  }
  if (auto g = args.Get("kill-grace")) {
    Result<int64_t> n = Seconds(*g, "kill-grace");
    if (!n.ok()) return n.status();
    req.kill_grace_sec = *n;
  }
  return req;
}

std::string DescribeResolved(const EgressPolicy& p) {
  std::string text;
  for (const EgressResolvedName& n : p.resolved) {
    if (!text.empty()) text += "; ";
    text += n.name;
    for (const std::string& a : n.addresses) text += " " + a;
  }
  return text;
}

int RemoteExitStatus(const ExecInfo& e) {
  if (e.exit_code) return static_cast<int>(*e.exit_code & 0xFF);
  return 1;  // no status: the daemon lost the process (see the exec's error)
}

std::string DescribeExec(const ExecInfo& e) {
  std::vector<std::vector<std::string>> rows = {
      {"id", e.id},
      {"state", e.running ? "running" : "exited"},
      {"pid", std::to_string(e.pid)},
      {"exit_code", e.exit_code ? std::to_string(*e.exit_code) : "-"},
      {"signal", e.signal.value_or("-")},
      {"timed_out", e.timed_out ? "yes" : "no"},
      {"killed_by", e.killed_by.value_or("-")},
      {"started_at", e.started_at},
      {"ended_at", e.ended_at.value_or("-")},
      {"duration", std::to_string(e.duration_ms) + " ms"},
      {"stdout", Output::HumanSize(e.stdout_bytes)},
      {"stderr", Output::HumanSize(e.stderr_bytes)},
      {"acked", e.acked ? "yes" : "no"},
  };
  rows.push_back({"profile", e.profile});
  if (e.network) rows.push_back({"network", *e.network});
  if (e.egress) {
    std::string policy = e.egress->mode;
    for (const std::string& a : e.egress->allow) policy += " allow " + a;
    for (const std::string& d : e.egress->deny) policy += " deny " + d;
    if (e.egress->dns) policy += " dns";
    rows.push_back({"egress", policy});
    if (!e.egress->resolved.empty()) rows.push_back({"resolved", DescribeResolved(*e.egress)});
  }
  if (e.restriction) {
    const ExecRestriction& r = *e.restriction;
    std::string filter = r.seccomp
                             ? std::to_string(r.seccomp_refused_syscalls) + " system calls refused"
                             : "no seccomp filter (" + r.seccomp_why + ")";
    rows.push_back({"restriction", "user " + r.user + " (uid " + std::to_string(r.uid) +
                                       "), no capabilities, no_new_privs, " + filter});
    std::string readonly;
    for (const std::string& p : r.readonly_paths) readonly += (readonly.empty() ? "" : " ") + p;
    rows.push_back({"read-only", readonly.empty() ? std::string("none") : readonly});
  }
  if (e.error) rows.push_back({"error", *e.error});
  return Output::Table(rows);
}

void WriteAllTo(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the reader went away; nothing sensible to do
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace agentd::cli
