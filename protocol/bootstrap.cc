#include "agentd/protocol/bootstrap.h"

#include "agentd/protocol/object_reader.h"

namespace agentd {
namespace {

bool IsVisibleAscii(const std::string& s) {
  for (char c : s) {
    if (c <= 0x20 || c >= 0x7F) return false;
  }
  return true;
}

}  // namespace

Status ValidateEnvName(const std::string& name, std::string_view field) {
  if (name.empty() || name.find('=') != std::string::npos || name.find('\0') != std::string::npos) {
    return Status::InvalidRequest(
               "environment variable names must be non-empty and contain "
               "neither '=' nor NUL")
        .With("field", std::string(field))
        .With("name", name);
  }
  return Status::Ok();
}

Result<BootstrapRequest> DecodeBootstrapRequest(const json::Value& doc) {
  ObjectReader r(doc);
  BootstrapRequest req;
  std::optional<std::string> token = r.String("token");
  r.Require("token", token.has_value());
  std::optional<EnvOverlay> env = r.StringMap("env", /*allow_null=*/false);
  AGENTD_RETURN_IF_ERROR(r.Finish());
  req.token = std::move(*token);
  if (req.token.empty() || req.token.size() > kMaxTokenBytes || !IsVisibleAscii(req.token)) {
    return Status::InvalidRequest("token must be 1 to " + std::to_string(kMaxTokenBytes) +
                                  " visible ASCII characters")
        .With("field", "token")
        .With("max_bytes", kMaxTokenBytes);
  }
  if (env) {
    for (auto& [name, value] : *env) {
      AGENTD_RETURN_IF_ERROR(ValidateEnvName(name, "env"));
      if (value->find('\0') != std::string::npos) {
        return Status::InvalidRequest("environment values must not contain NUL")
            .With("field", "env")
            .With("name", name);
      }
      req.env.emplace_back(std::move(name), std::move(*value));
    }
  }
  return req;
}

json::Value EncodeBootstrapRequest(const BootstrapRequest& req) {
  json::Object env;
  for (const auto& [k, v] : req.env) env.Set(k, v);
  json::Object o;
  o.Set("token", req.token);
  o.Set("env", std::move(env));
  return o;
}

json::Value EncodeBootstrapResponse(const BootstrapResponse& r) {
  json::Object o;
  o.Set("ok", true);
  o.Set("replayed", r.replayed);
  return o;
}

Result<BootstrapResponse> DecodeBootstrapResponse(const json::Value& doc) {
  const json::Value* replayed = doc.Find("replayed");
  if (!replayed || !replayed->is_bool()) {
    return Status::Error(ErrorCode::kProtocolError, "bootstrap answer lacks \"replayed\"");
  }
  return BootstrapResponse{replayed->as_bool()};
}

json::Value EncodeHealthResponse(const HealthResponse& h) {
  json::Object o;
  o.Set("status", h.status);
  o.Set("version", h.version);
  o.Set("protocol", h.protocol);
  o.Set("bootstrapped", h.bootstrapped);
  o.Set("busy", h.busy);
  o.Set("execs", h.execs);
  o.Set("uptime_ms", h.uptime_ms);
  json::Array runtimes;
  for (const std::string& r : h.runtimes) runtimes.emplace_back(r);
  o.Set("runtimes", std::move(runtimes));
  json::Array unavailable;
  for (const RuntimeUnavailable& u : h.runtimes_unavailable) {
    unavailable.emplace_back(
        json::Object().Set("runtime", u.runtime).Set("code", u.code).Set("reason", u.reason));
  }
  o.Set("runtimes_unavailable", std::move(unavailable));
  json::Array self_tests;
  for (const RuntimeSelfTestState& t : h.runtime_self_tests) {
    json::Object e;
    e.Set("runtime", t.runtime).Set("program", t.program).Set("state", t.state);
    if (t.duration_ms) e.Set("duration_ms", *t.duration_ms);
    self_tests.emplace_back(std::move(e));
  }
  o.Set("runtime_self_tests", std::move(self_tests));
  if (h.reason) o.Set("reason", *h.reason);
  if (h.errno_name) o.Set("errno", *h.errno_name);
  for (const json::Member& m : h.extra.members()) o.Set(m.key, m.value);
  return o;
}

Result<HealthResponse> DecodeHealthResponse(const json::Value& doc) {
  if (!doc.is_object()) return Status::Error(ErrorCode::kProtocolError, "health is not an object");
  HealthResponse h;
  for (const json::Member& m : doc.as_object().members()) {
    const json::Value& v = m.value;
    if (m.key == "status" && v.is_string()) {
      h.status = v.as_string();
    } else if (m.key == "version" && v.is_string()) {
      h.version = v.as_string();
    } else if (m.key == "protocol" && v.is_int()) {
      h.protocol = v.as_int();
    } else if (m.key == "bootstrapped" && v.is_bool()) {
      h.bootstrapped = v.as_bool();
    } else if (m.key == "busy" && v.is_bool()) {
      h.busy = v.as_bool();
    } else if (m.key == "execs" && v.is_int()) {
      h.execs = v.as_int();
    } else if (m.key == "uptime_ms" && v.is_int()) {
      h.uptime_ms = v.as_int();
    } else if (m.key == "reason" && v.is_string()) {
      h.reason = v.as_string();
    } else if (m.key == "errno" && v.is_string()) {
      h.errno_name = v.as_string();
    } else if (m.key == "runtimes" && v.is_array()) {
      for (const json::Value& r : v.as_array()) {
        if (r.is_string()) h.runtimes.push_back(r.as_string());
      }
    } else if (m.key == "runtimes_unavailable" && v.is_array()) {
      for (const json::Value& r : v.as_array()) {
        if (!r.is_object()) continue;
        RuntimeUnavailable u;
        for (const json::Member& f : r.as_object().members()) {
          if (!f.value.is_string()) continue;
          if (f.key == "runtime") u.runtime = f.value.as_string();
          if (f.key == "code") u.code = f.value.as_string();
          if (f.key == "reason") u.reason = f.value.as_string();
        }
        h.runtimes_unavailable.push_back(std::move(u));
      }
    } else if (m.key == "runtime_self_tests" && v.is_array()) {
      for (const json::Value& r : v.as_array()) {
        if (!r.is_object()) continue;
        RuntimeSelfTestState t;
        for (const json::Member& f : r.as_object().members()) {
          if (f.key == "duration_ms" && f.value.is_int()) t.duration_ms = f.value.as_int();
          if (!f.value.is_string()) continue;
          if (f.key == "runtime") t.runtime = f.value.as_string();
          if (f.key == "program") t.program = f.value.as_string();
          if (f.key == "state") t.state = f.value.as_string();
        }
        h.runtime_self_tests.push_back(std::move(t));
      }
    } else {
      h.extra.Set(m.key, v);
    }
  }
  return h;
}

}  // namespace agentd
