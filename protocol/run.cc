// Run code (docs/PROTOCOL.md, "Run code").
#include "agentd/protocol/run.h"

#include "agentd/protocol/bootstrap.h"

namespace agentd {
namespace {

constexpr int64_t kMaxAskedTimeoutSec = 30 * 86400;

bool IsContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

json::Value OptString(const std::optional<std::string>& s) {
  return s ? json::Value(*s) : json::Value();
}

std::optional<std::string> GetString(const json::Value& doc, std::string_view key) {
  const json::Value* v = doc.Find(key);
  if (v && v->is_string()) return v->as_string();
  return std::nullopt;
}

std::string FilesPart(const RunOutcome& o) {
  if (o.changed_files == 0) return o.changed_files_truncated ? "; changed files unknown" : "";
  std::string more = o.changed_files_truncated ? " or more" : "";
  return "; " + std::to_string(o.changed_files) + more +
         (o.changed_files == 1 && more.empty() ? " file changed" : " files changed");
}

}  // namespace

Result<RunRequest> DecodeRunRequest(const json::Value& doc) {
  ObjectReader r(doc);
  RunRequest req;
  std::optional<std::string> runtime = r.String("runtime");
  std::optional<std::string> code = r.String("code");
  req.timeout_sec = r.Int("timeout_sec", 1, kMaxAskedTimeoutSec);
  req.cwd = r.String("cwd");
  std::optional<EnvOverlay> env = r.StringMap("env", /*allow_null=*/true);
  req.user = r.String("user");
  req.group = r.String("group");
  req.stdin_data = r.String("stdin");
  req.profile = r.String("profile");
  req.network = r.String("network");
  const json::Value* egress = r.Raw("egress");
  req.scan_changes = r.Bool("scan_changes").value_or(true);
  std::optional<std::string> marker = r.String("result_marker");
  req.artifacts_dir = r.String("artifacts_dir");
  req.limits = ReadExecLimits(r);
  if (marker) {
    if (marker->size() > kMaxResultMarkerBytes ||
        marker->find_first_of(std::string_view("\n\r\0", 3)) != std::string::npos) {
      r.Fail("result_marker", "field \"result_marker\" must be at most " +
                                  std::to_string(kMaxResultMarkerBytes) +
                                  " bytes without a line break or NUL (\"\" turns it off)");
    } else {
      req.result_marker = *marker;
    }
  }
  r.Require("runtime", runtime.has_value());
  r.Require("code", code.has_value());
  if (runtime) {
    std::optional<Runtime> parsed = ParseRuntime(*runtime);
    if (!parsed) r.Fail("runtime", "field \"runtime\" must be \"shell\", \"python\" or \"ts\"");
    req.runtime = parsed.value_or(Runtime::kShell);
  }
  if (code && code->find('\0') != std::string::npos) {
    r.Fail("code", "field \"code\" must not contain NUL");
  }
  for (const char* key : {"cwd", "user", "group"}) {
    const std::optional<std::string>& v =
        key[0] == 'c' ? req.cwd : (key[0] == 'u' ? req.user : req.group);
    if (v && (v->empty() || v->find('\0') != std::string::npos)) {
      r.Fail(key, "field \"" + std::string(key) + "\" must be a non-empty string without NUL");
    }
  }
  AGENTD_RETURN_IF_ERROR(r.Finish());
  if (req.profile) AGENTD_RETURN_IF_ERROR(ValidateProfile(*req.profile));
  if (req.network) AGENTD_RETURN_IF_ERROR(ValidateNetwork(*req.network));
  if (req.artifacts_dir) AGENTD_RETURN_IF_ERROR(ValidateArtifactsDir(*req.artifacts_dir));
  if (egress && !egress->is_null()) {
    Result<EgressPolicy> policy = DecodeEgressPolicy(*egress);
    if (!policy.ok()) return policy.status();
    req.egress = std::move(*policy);
  }
  req.code = std::move(*code);
  if (env) {
    for (const auto& [name, value] : *env) {
      AGENTD_RETURN_IF_ERROR(ValidateEnvName(name, "env"));
      if (value && value->find('\0') != std::string::npos) {
        return Status::InvalidRequest("environment values must not contain NUL")
            .With("field", "env")
            .With("name", name);
      }
    }
    req.env = std::move(*env);
  }
  return req;
}

json::Value EncodeRunRequest(const RunRequest& req) {
  json::Object o;
  o.Set("runtime", std::string(RuntimeName(req.runtime)));
  o.Set("code", req.code);
  if (req.timeout_sec) o.Set("timeout_sec", *req.timeout_sec);
  if (req.cwd) o.Set("cwd", *req.cwd);
  if (!req.env.empty()) {
    json::Object env;
    for (const auto& [k, v] : req.env) env.Set(k, v ? json::Value(*v) : json::Value());
    o.Set("env", std::move(env));
  }
  if (req.user) o.Set("user", *req.user);
  if (req.group) o.Set("group", *req.group);
  if (req.stdin_data) o.Set("stdin", *req.stdin_data);
  if (req.profile) o.Set("profile", *req.profile);
  if (req.network) o.Set("network", *req.network);
  if (req.egress) o.Set("egress", EncodeEgressPolicy(*req.egress));
  if (!req.scan_changes) o.Set("scan_changes", false);
  if (req.result_marker != kDefaultResultMarker) o.Set("result_marker", req.result_marker);
  if (req.artifacts_dir) o.Set("artifacts_dir", *req.artifacts_dir);
  WriteExecLimits(o, req.limits);
  return o;
}

ExecStartRequest RunToExecRequest(const RunRequest& req, std::string cwd, int64_t timeout_sec) {
  ExecStartRequest e;
  e.runtime = req.runtime;
  e.code = req.code;
  e.cwd = std::move(cwd);
  e.env = req.env;
  e.user = req.user;
  e.group = req.group;
  e.stdin_data = req.stdin_data;
  e.profile = req.profile;
  e.network = req.network;
  e.egress = req.egress;
  e.timeout_sec = timeout_sec;
  e.kill_grace_sec = 2;  // a run is waited for: a short TERM-to-KILL grace
  e.limits = req.limits;
  return e;
}

json::Value EncodeRunResponse(const RunResponse& r) {
  json::Object o;
  o.Set("summary", r.summary);
  o.Set("exit_code", r.exit_code ? json::Value(*r.exit_code) : json::Value());
  o.Set("success", r.success);
  o.Set("stdout", r.stdout_text);
  o.Set("stderr", r.stderr_text);
  o.Set("truncated", r.truncated);
  o.Set("duration_ms", r.duration_ms);
  json::Array files;
  for (const ChangedFile& f : r.changed_files) {
    json::Object item;
    item.Set("path", f.path);
    item.Set("change", f.change);
    item.Set("type", f.type);
    files.push_back(std::move(item));
  }
  o.Set("changed_files", std::move(files));
  o.Set("changed_files_truncated", r.changed_files_truncated);
  o.Set("changed_files_bound",
        r.changed_files_bound ? EncodeLimitHit(*r.changed_files_bound) : json::Value());
  o.Set("signal", OptString(r.signal));
  o.Set("timed_out", r.timed_out);
  o.Set("killed_by", OptString(r.killed_by));
  o.Set("limit", r.limit ? EncodeLimitHit(*r.limit) : json::Value());
  o.Set("stdout_bytes", r.stdout_bytes);
  o.Set("stderr_bytes", r.stderr_bytes);
  o.Set("runtime", r.runtime);
  o.Set("cwd", r.cwd);
  o.Set("timeout_sec", r.timeout_sec);
  o.Set("error", OptString(r.error));
  o.Set("profile", r.profile);
  if (r.restriction) o.Set("restriction", EncodeExecRestriction(*r.restriction));
  if (r.network) o.Set("network", *r.network);
  if (r.egress) o.Set("egress", EncodeEgressReport(*r.egress));
  o.Set("exception", r.exception ? EncodeRunException(*r.exception) : json::Value());
  if (r.result) o.Set("result", *r.result);
  o.Set("result_error", OptString(r.result_error));
  if (r.artifacts) SetArtifacts(o, *r.artifacts);
  return o;
}

Result<RunResponse> DecodeRunResponse(const json::Value& doc) {
  RunResponse r;
  std::optional<std::string> summary = GetString(doc, "summary");
  const json::Value* files = doc.Find("changed_files");
  if (!summary || !files || !files->is_array()) {
    return Status::Error(ErrorCode::kProtocolError,
                         "malformed answer: run answer lacks \"summary\" or \"changed_files\"");
  }
  r.summary = std::move(*summary);
  if (const json::Value* v = doc.Find("exit_code"); v && v->is_int()) r.exit_code = v->as_int();
  if (const json::Value* v = doc.Find("success"); v && v->is_bool()) r.success = v->as_bool();
  r.stdout_text = GetString(doc, "stdout").value_or("");
  r.stderr_text = GetString(doc, "stderr").value_or("");
  if (const json::Value* v = doc.Find("truncated"); v && v->is_bool()) r.truncated = v->as_bool();
  if (const json::Value* v = doc.Find("duration_ms"); v && v->is_int()) {
    r.duration_ms = v->as_int();
  }
  for (const json::Value& item : files->as_array()) {
    ChangedFile f;
    f.path = GetString(item, "path").value_or("");
    f.change = GetString(item, "change").value_or("");
    f.type = GetString(item, "type").value_or("");
    r.changed_files.push_back(std::move(f));
  }
  if (const json::Value* v = doc.Find("changed_files_truncated"); v && v->is_bool()) {
    r.changed_files_truncated = v->as_bool();
  }
  r.changed_files_bound = DecodeLimitHit(doc.Find("changed_files_bound"));
  r.signal = GetString(doc, "signal");
  if (const json::Value* v = doc.Find("timed_out"); v && v->is_bool()) r.timed_out = v->as_bool();
  r.killed_by = GetString(doc, "killed_by");
  r.limit = DecodeLimitHit(doc.Find("limit"));
  if (const json::Value* v = doc.Find("stdout_bytes"); v && v->is_int()) {
    r.stdout_bytes = static_cast<uint64_t>(v->as_int());
  }
  if (const json::Value* v = doc.Find("stderr_bytes"); v && v->is_int()) {
    r.stderr_bytes = static_cast<uint64_t>(v->as_int());
  }
  r.runtime = GetString(doc, "runtime").value_or("");
  r.cwd = GetString(doc, "cwd").value_or("");
  if (const json::Value* v = doc.Find("timeout_sec"); v && v->is_int()) r.timeout_sec = v->as_int();
  r.error = GetString(doc, "error");
  r.profile = GetString(doc, "profile").value_or(kProfileUnrestricted);
  r.restriction = DecodeExecRestriction(doc.Find("restriction"));
  r.network = GetString(doc, "network");
  if (const json::Value* v = doc.Find("egress"); v && v->is_object()) {
    Result<EgressReport> e = DecodeEgressReport(*v);
    if (e.ok()) r.egress = std::move(*e);
  }
  if (const json::Value* v = doc.Find("exception"); v && v->is_object()) {
    Result<RunException> e = DecodeRunException(*v);
    if (e.ok()) r.exception = std::move(*e);
  }
  if (const json::Value* v = doc.Find("result")) r.result = *v;
  r.result_error = GetString(doc, "result_error");
  r.artifacts = DecodeArtifacts(doc);
  return r;
}

std::string_view Utf8Head(std::string_view bytes, size_t max) {
  if (bytes.size() <= max) return bytes;
  size_t cut = max;
  for (int i = 0; i < 3 && cut > 0 && IsContinuation(bytes[cut]); ++i) --cut;
  if (IsContinuation(bytes[cut])) cut = max;  // not UTF-8 anyway: cut where asked
  return bytes.substr(0, cut);
}

std::string_view Utf8Tail(std::string_view bytes, size_t max) {
  if (bytes.size() <= max) return bytes;
  size_t start = bytes.size() - max;
  size_t s = start;
  for (int i = 0; i < 3 && s < bytes.size() && IsContinuation(bytes[s]); ++i) ++s;
  if (s < bytes.size() && IsContinuation(bytes[s])) s = start;
  return bytes.substr(s);
}

std::string OmittedMarker(uint64_t omitted_bytes) {
  return "\n[... " + std::to_string(omitted_bytes) + " bytes omitted ...]\n";
}

std::string LastErrorLine(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    size_t start = text.rfind('\n', end - 1);
    start = start == std::string_view::npos ? 0 : start + 1;
    std::string line;
    for (char c : text.substr(start, end - start)) {
      unsigned char u = static_cast<unsigned char>(c);
      line += (u < 0x20 || u == 0x7f) ? ' ' : c;
    }
    size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos) {
      size_t last = line.find_last_not_of(' ');
      line = line.substr(first, last - first + 1);
      if (line.size() > kMaxSummaryLineBytes) {
        line = std::string(Utf8Head(line, kMaxSummaryLineBytes - 3)) + "...";
      }
      return line;
    }
    if (start == 0) break;
    end = start - 1;
  }
  return "";
}

std::string RunSummary(const RunOutcome& o) {
  std::string files = FilesPart(o);
  if (o.egress) {
    std::string refused = EgressRefusalLine(*o.egress);
    if (!refused.empty()) files += "; network: " + refused;
  }
  if (o.limit) return "killed: " + DescribeLimit(*o.limit) + " exceeded" + files;
  std::string time = " in " + std::to_string(o.duration_ms) + " ms";
  if (o.killed_by == "kill") {
    return "killed: by a kill request (signal " + o.signal.value_or("?") + ")" + time + files;
  }
  if (o.killed_by == "daemon_shutdown") return "killed: the daemon was shutting down" + files;
  if (o.killed_by) return "killed: " + *o.killed_by + time + files;
  std::string head;
  if (!o.exit_code) {
    head = "ended with an unknown status" + time;
  } else if (o.signal) {
    head = "exit " + std::to_string(*o.exit_code) + " (signal " + *o.signal + ")" + time;
  } else {
    head = "exit " + std::to_string(*o.exit_code) + time;
  }
  if (o.exit_code == 0) return head + files;
  std::string line =
      o.exception ? ExceptionSummaryLine(*o.exception) : LastErrorLine(o.stderr_tail);
  return head + files + (line.empty() ? "" : ": " + line);
}

}  // namespace agentd
