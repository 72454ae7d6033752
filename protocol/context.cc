#include "agentd/protocol/context.h"

#include "agentd/protocol/artifacts.h"
#include "agentd/protocol/exec.h"
#include "agentd/protocol/object_reader.h"

namespace agentd {
namespace {

// Members of a run request that are each run's, not the context's.
constexpr const char* kPerRunFields[] = {"code", "stdin", "timeout_sec", "artifacts_dir"};

Status ValidateRunId(const std::string& id) {
  if (IsValidExecId(id)) return Status::Ok();
  return Status::InvalidRequest("run ids are 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', '-'")
      .With("field", "run_id")
      .With("max_bytes", kMaxRunIdBytes);
}

}  // namespace

Result<ContextCreateRequest> DecodeContextCreateRequest(const json::Value& doc) {
  if (!doc.is_object()) return Status::InvalidRequest("request body must be a JSON object");
  ContextCreateRequest req;
  const json::Value* id = doc.Find("id");
  if (!id || !id->is_string()) {
    return Status::InvalidRequest("field \"id\" is required: a caller-minted string")
        .With("field", "id");
  }
  if (!IsValidExecId(id->as_string())) {
    return Status::InvalidRequest(
               "context ids are 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', '-'")
        .With("field", "id")
        .With("max_bytes", kMaxExecIdBytes);
  }
  req.id = id->as_string();
  // The rest is a run request without code: decoded (and checked) by the
  // run's own decoder, so a context takes exactly the options a run takes.
  json::Object spec;
  for (const json::Member& m : doc.as_object().members()) {
    for (const char* field : kPerRunFields) {
      if (m.key == field) {
        return Status::InvalidRequest("field \"" + m.key +
                                      "\" belongs to each run (POST /v1/contexts/{id}/run), "
                                      "not to the context")
            .With("field", m.key);
      }
    }
    if (m.key != "id") spec.Set(m.key, m.value);
  }
  spec.Set("code", std::string());
  Result<RunRequest> run = DecodeRunRequest(json::Value(std::move(spec)));
  if (!run.ok()) return run.status();
  if (run->runtime != Runtime::kPython && run->runtime != Runtime::kTs) {
    return Status::InvalidRequest(
               "field \"runtime\" of a context must be \"python\" or \"ts\" (got \"" +
               std::string(RuntimeName(run->runtime)) + "\")")
        .With("field", "runtime")
        .With("runtime", std::string(RuntimeName(run->runtime)));
  }
  req.spec = std::move(*run);
  return req;
}

json::Value EncodeContextCreateRequest(const ContextCreateRequest& req) {
  json::Value v = EncodeRunRequest(req.spec);
  json::Object& o = v.as_object();
  o.Erase("code");
  o.Set("id", req.id);
  return v;
}

Result<ContextRunRequest> DecodeContextRunRequest(const json::Value& doc) {
  ObjectReader r(doc);
  ContextRunRequest req;
  std::optional<std::string> code = r.String("code");
  req.timeout_sec = r.Int("timeout_sec", 1, 30 * 86400);
  req.run_id = r.String("run_id");
  req.artifacts_dir = r.String("artifacts_dir");
  const json::Value* egress = r.Raw("egress");
  r.Require("code", code.has_value());
  if (code && code->find('\0') != std::string::npos) {
    r.Fail("code", "field \"code\" must not contain NUL");
  }
  AGENTD_RETURN_IF_ERROR(r.Finish());
  if (code->size() > kMaxContextCodeBytes) {
    return Status::Error(ErrorCode::kPayloadTooLarge, "field \"code\" is " +
                                                          std::to_string(code->size()) +
                                                          " bytes; a context run takes at most " +
                                                          std::to_string(kMaxContextCodeBytes))
        .With("field", "code")
        .With("bytes", static_cast<int64_t>(code->size()))
        .With("limit", static_cast<int64_t>(kMaxContextCodeBytes));
  }
  if (req.run_id) AGENTD_RETURN_IF_ERROR(ValidateRunId(*req.run_id));
  if (req.artifacts_dir) AGENTD_RETURN_IF_ERROR(ValidateArtifactsDir(*req.artifacts_dir));
  if (egress && !egress->is_null()) {
    Result<EgressPolicy> policy = DecodeEgressPolicy(*egress);
    if (!policy.ok()) return policy.status();
    req.egress = std::move(*policy);
  }
  req.code = std::move(*code);
  return req;
}

json::Value EncodeContextRunRequest(const ContextRunRequest& req) {
  json::Object o;
  o.Set("code", req.code);
  if (req.timeout_sec) o.Set("timeout_sec", *req.timeout_sec);
  if (req.run_id) o.Set("run_id", *req.run_id);
  if (req.artifacts_dir) o.Set("artifacts_dir", *req.artifacts_dir);
  if (req.egress) o.Set("egress", EncodeEgressPolicy(*req.egress));
  return o;
}

json::Object EncodeContextInfo(const ContextInfo& c) {
  json::Object o;
  o.Set("id", c.id);
  o.Set("runtime", c.runtime);
  o.Set("state", c.state);
  o.Set("cwd", c.cwd);
  o.Set("pid", c.pid);
  o.Set("runs", c.runs);
  o.Set("created_at", c.created_at);
  o.Set("profile", c.profile);
  o.Set("network", c.network ? json::Value(*c.network) : json::Value());
  o.Set("ended_reason", c.ended_reason ? json::Value(*c.ended_reason) : json::Value());
  o.Set("killed_by", c.killed_by ? json::Value(*c.killed_by) : json::Value());
  o.Set("limit", c.limit ? EncodeLimitHit(*c.limit) : json::Value());
  return o;
}

Result<ContextInfo> DecodeContextInfo(const json::Value& doc) {
  if (!doc.is_object()) {
    return Status::Error(ErrorCode::kProtocolError, "context is not an object");
  }
  ContextInfo c;
  auto str = [&doc](const char* key, std::string& out) {
    if (const json::Value* v = doc.Find(key); v && v->is_string()) out = v->as_string();
  };
  auto opt = [&doc](const char* key, std::optional<std::string>& out) {
    if (const json::Value* v = doc.Find(key); v && v->is_string()) out = v->as_string();
  };
  auto num = [&doc](const char* key, int64_t& out) {
    if (const json::Value* v = doc.Find(key); v && v->is_int()) out = v->as_int();
  };
  str("id", c.id);
  str("runtime", c.runtime);
  str("state", c.state);
  str("cwd", c.cwd);
  str("created_at", c.created_at);
  str("profile", c.profile);
  num("pid", c.pid);
  num("runs", c.runs);
  opt("network", c.network);
  opt("ended_reason", c.ended_reason);
  opt("killed_by", c.killed_by);
  c.limit = DecodeLimitHit(doc.Find("limit"));
  if (c.id.empty() || c.state.empty()) {
    return Status::Error(ErrorCode::kProtocolError, "context object lacks \"id\" or \"state\"");
  }
  return c;
}

}  // namespace agentd
