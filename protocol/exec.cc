// Exec ids and the start request (docs/PROTOCOL.md, "Start").
#include "agentd/protocol/exec.h"

#include "agentd/protocol/base64.h"
#include "agentd/protocol/bootstrap.h"
#include "agentd/protocol/sha256.h"

namespace agentd {
namespace {

bool IsIdChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

bool HasNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

// A text member that must be non-empty and free of NUL (it becomes a C
// string in the child: a path, a user name, a program).
void CheckText(ObjectReader& r, std::string_view key, const std::optional<std::string>& v) {
  if (v && (v->empty() || HasNul(*v))) {
    r.Fail(key, "field \"" + std::string(key) + "\" must be a non-empty string without NUL");
  }
}

Status CheckEnv(const EnvOverlay& env) {
  for (const auto& [name, value] : env) {
    AGENTD_RETURN_IF_ERROR(ValidateEnvName(name, "env"));
    if (value && HasNul(*value)) {
      return Status::InvalidRequest("environment values must not contain NUL")
          .With("field", "env")
          .With("name", name);
    }
  }
  return Status::Ok();
}

// The nested "pty" object; problems are reported on the field "pty".
std::optional<PtySpec> DecodePty(ObjectReader& outer, const json::Value* v) {
  if (!v) return std::nullopt;
  ObjectReader r(*v);
  PtySpec pty;
  std::optional<int64_t> rows = r.Int("rows", 1, kMaxPtyDimension);
  std::optional<int64_t> cols = r.Int("cols", 1, kMaxPtyDimension);
  r.Require("rows", rows.has_value());
  r.Require("cols", cols.has_value());
  pty.term = r.String("term");
  CheckText(r, "term", pty.term);
  Status s = r.Finish();
  if (!s.ok()) {
    outer.Fail("pty", "field \"pty\": " + s.message());
    return std::nullopt;
  }
  pty.rows = *rows;
  pty.cols = *cols;
  return pty;
}

}  // namespace

bool IsValidExecId(std::string_view id) {
  if (id.empty() || id.size() > kMaxExecIdBytes) return false;
  for (char c : id) {
    if (!IsIdChar(c)) return false;
  }
  return true;
}

Status ValidateExecId(std::string_view id) {
  if (IsValidExecId(id)) return Status::Ok();
  return Status::InvalidRequest("exec ids are 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', '-'")
      .With("field", "id")
      .With("max_bytes", kMaxExecIdBytes);
}

Status ValidateProfile(std::string_view name, std::string_view field) {
  if (name == kProfileRestricted || name == kProfileUnrestricted) return Status::Ok();
  return Status::InvalidRequest("field \"" + std::string(field) +
                                "\" must be \"restricted\" or \"unrestricted\"")
      .With("field", std::string(field));
}

Status ValidateNetwork(std::string_view value) {
  if (value == kNetworkNone) return Status::Ok();
  return Status::InvalidRequest(
             "field \"network\" must be \"none\" (leave it out for the "
             "guest's network)")
      .With("field", std::string("network"));
}

json::Object EncodeExecRestriction(const ExecRestriction& r) {
  json::Object o;
  o.Set("user", r.user);
  o.Set("uid", r.uid);
  o.Set("gid", r.gid);
  o.Set("no_new_privs", r.no_new_privs);
  o.Set("capabilities", r.capabilities);
  o.Set("seccomp_refused_syscalls", r.seccomp_refused_syscalls);
  o.Set("seccomp", r.seccomp);
  if (!r.seccomp) o.Set("seccomp_why", r.seccomp_why);
  json::Array readonly;
  for (const std::string& p : r.readonly_paths) readonly.emplace_back(p);
  o.Set("readonly_paths", std::move(readonly));
  return o;
}

std::optional<ExecRestriction> DecodeExecRestriction(const json::Value* v) {
  if (!v || !v->is_object()) return std::nullopt;
  ExecRestriction r;
  if (const json::Value* x = v->Find("user"); x && x->is_string()) r.user = x->as_string();
  if (const json::Value* x = v->Find("uid"); x && x->is_int()) r.uid = x->as_int();
  if (const json::Value* x = v->Find("gid"); x && x->is_int()) r.gid = x->as_int();
  if (const json::Value* x = v->Find("no_new_privs"); x && x->is_bool()) {
    r.no_new_privs = x->as_bool();
  }
  if (const json::Value* x = v->Find("capabilities"); x && x->is_string()) {
    r.capabilities = x->as_string();
  }
  if (const json::Value* x = v->Find("seccomp_refused_syscalls"); x && x->is_int()) {
    r.seccomp_refused_syscalls = x->as_int();
  }
  if (const json::Value* x = v->Find("seccomp"); x && x->is_bool()) r.seccomp = x->as_bool();
  if (const json::Value* x = v->Find("seccomp_why"); x && x->is_string()) {
    r.seccomp_why = x->as_string();
  }
  if (const json::Value* x = v->Find("readonly_paths"); x && x->is_array()) {
    for (const json::Value& p : x->as_array()) {
      if (p.is_string()) r.readonly_paths.push_back(p.as_string());
    }
  }
  return r;
}

std::vector<std::string> ExecStartRequest::EffectiveArgv() const {
  if (runtime && code) return RuntimeArgv(*runtime, *code);
  if (!command) return argv;
  return {shell.value_or(kDefaultShell), "-c", *command};
}

Result<ExecStartRequest> DecodeExecStartRequest(const json::Value& doc) {
  ObjectReader r(doc);
  ExecStartRequest req;
  std::optional<std::vector<std::string>> argv = r.StringArray("argv");
  req.command = r.String("command");
  req.shell = r.String("shell");
  std::optional<EnvOverlay> env = r.StringMap("env", /*allow_null=*/true);
  req.cwd = r.String("cwd");
  req.user = r.String("user");
  req.group = r.String("group");
  req.profile = r.String("profile");
  req.network = r.String("network");
  const json::Value* egress = r.Raw("egress");
  std::optional<std::string> stdin_text = r.String("stdin");
  std::optional<std::string> stdin_b64 = r.String("stdin_b64");
  req.stdin_stream = r.Bool("stdin_stream").value_or(false);
  req.timeout_sec = r.Int("timeout_sec", 1, kMaxTimeoutSec);
  req.kill_grace_sec = r.Int("kill_grace_sec", 0, kMaxKillGraceSec);
  req.pty = DecodePty(r, r.Raw("pty"));
  std::optional<std::string> runtime = r.String("runtime");
  req.code = r.String("code");
  req.limits = ReadExecLimits(r);

  if (runtime) {
    req.runtime = ParseRuntime(*runtime);
    if (!req.runtime)
      r.Fail("runtime", "field \"runtime\" must be \"shell\", \"python\" or \"ts\"");
  }
  if (runtime.has_value() != req.code.has_value()) {
    r.Fail(runtime ? "code" : "runtime", "fields \"runtime\" and \"code\" go together");
  }
  int modes = argv.has_value() + req.command.has_value() + req.code.has_value();
  if (modes != 1) {
    r.Fail(argv ? "command" : "argv",
           "exactly one of \"argv\", \"command\" and \"runtime\"/\"code\" is required");
  }
  if (req.code && HasNul(*req.code)) r.Fail("code", "field \"code\" must not contain NUL");
  if (argv) {
    if (argv->empty() || (*argv)[0].empty()) {
      r.Fail("argv", "field \"argv\" must be a non-empty array whose first element is non-empty");
    }
    for (const std::string& a : *argv) {
      if (HasNul(a)) r.Fail("argv", "argv elements must not contain NUL");
    }
    req.argv = std::move(*argv);
  }
  CheckText(r, "command", req.command);
  CheckText(r, "shell", req.shell);
  if (req.shell && !req.command) r.Fail("shell", "field \"shell\" needs \"command\"");
  CheckText(r, "cwd", req.cwd);
  CheckText(r, "user", req.user);
  CheckText(r, "group", req.group);
  int stdin_modes = stdin_text.has_value() + stdin_b64.has_value() + req.stdin_stream;
  if (stdin_modes > 1) {
    r.Fail("stdin", "at most one of \"stdin\", \"stdin_b64\" and \"stdin_stream\" may be given");
  }
  if (req.pty && (stdin_text || stdin_b64)) {
    r.Fail("pty", "a PTY exec takes its input through the stdin route, not \"stdin\"");
  }
  if (stdin_b64) {
    std::optional<std::string> bytes = Base64Decode(*stdin_b64);
    if (!bytes) r.Fail("stdin_b64", "field \"stdin_b64\" must be padded standard base64");
    req.stdin_data = std::move(bytes);
    req.stdin_was_b64 = true;
  } else if (stdin_text) {
    req.stdin_data = std::move(stdin_text);
  }
  AGENTD_RETURN_IF_ERROR(r.Finish());
  if (req.profile) AGENTD_RETURN_IF_ERROR(ValidateProfile(*req.profile));
  if (req.network) AGENTD_RETURN_IF_ERROR(ValidateNetwork(*req.network));
  if (egress && !egress->is_null()) {
    Result<EgressPolicy> policy = DecodeEgressPolicy(*egress);
    if (!policy.ok()) return policy.status();
    req.egress = std::move(*policy);
  }
  if (env) {
    AGENTD_RETURN_IF_ERROR(CheckEnv(*env));
    req.env = std::move(*env);
  }
  return req;
}

json::Value EncodeExecStartRequest(const ExecStartRequest& req) {
  json::Object o;
  if (req.code) {
    if (req.runtime) o.Set("runtime", std::string(RuntimeName(*req.runtime)));
    o.Set("code", *req.code);
  } else if (req.command) {
    o.Set("command", *req.command);
    if (req.shell) o.Set("shell", *req.shell);
  } else {
    json::Array argv;
    for (const std::string& a : req.argv) argv.emplace_back(a);
    o.Set("argv", std::move(argv));
  }
  if (!req.env.empty()) {
    json::Object env;
    for (const auto& [k, v] : req.env) env.Set(k, v ? json::Value(*v) : json::Value());
    o.Set("env", std::move(env));
  }
  if (req.cwd) o.Set("cwd", *req.cwd);
  if (req.user) o.Set("user", *req.user);
  if (req.group) o.Set("group", *req.group);
  if (req.profile) o.Set("profile", *req.profile);
  if (req.network) o.Set("network", *req.network);
  if (req.egress) o.Set("egress", EncodeEgressPolicy(*req.egress));
  if (req.stdin_data) {
    if (req.stdin_was_b64) {
      o.Set("stdin_b64", Base64Encode(*req.stdin_data));
    } else {
      o.Set("stdin", *req.stdin_data);
    }
  }
  if (req.stdin_stream) o.Set("stdin_stream", true);
  if (req.timeout_sec) o.Set("timeout_sec", *req.timeout_sec);
  if (req.kill_grace_sec) o.Set("kill_grace_sec", *req.kill_grace_sec);
  WriteExecLimits(o, req.limits);
  if (req.pty) {
    json::Object pty;
    pty.Set("rows", req.pty->rows);
    pty.Set("cols", req.pty->cols);
    if (req.pty->term) pty.Set("term", *req.pty->term);
    o.Set("pty", std::move(pty));
  }
  return o;
}

std::string ExecFingerprint(const ExecStartRequest& req) {
  // The addresses a name resolved to are the daemon's, not the request's.
  if (req.egress && !req.egress->resolved.empty()) {
    ExecStartRequest asked = req;
    asked.egress->resolved.clear();
    return Sha256Hex(json::Canonical(EncodeExecStartRequest(asked)));
  }
  return Sha256Hex(json::Canonical(EncodeExecStartRequest(req)));
}

}  // namespace agentd
