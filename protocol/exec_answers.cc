// The daemon's exec answers (docs/PROTOCOL.md, "Exec"): the exec object,
// poll, list, stdin, the kill body, and the SSE payloads.
#include <charconv>

#include "agentd/protocol/base64.h"
#include "agentd/protocol/exec.h"

namespace agentd {
namespace {

Status ProtocolError(std::string what) {
  return Status::Error(ErrorCode::kProtocolError, "malformed answer: " + std::move(what));
}

json::Value OptString(const std::optional<std::string>& s) {
  return s ? json::Value(*s) : json::Value();
}

json::Value OptInt(const std::optional<int64_t>& n) { return n ? json::Value(*n) : json::Value(); }

bool GetU64(const json::Value& doc, std::string_view key, uint64_t* out) {
  const json::Value* v = doc.Find(key);
  if (!v || !v->is_int() || v->as_int() < 0) return false;
  *out = static_cast<uint64_t>(v->as_int());
  return true;
}

std::optional<std::string> GetOptString(const json::Value& doc, std::string_view key) {
  const json::Value* v = doc.Find(key);
  if (v && v->is_string()) return v->as_string();
  return std::nullopt;
}

json::Value EncodeSlice(const OutputSlice& s) {
  json::Object o;
  o.Set("from", s.from);
  o.Set("next", s.next);
  o.Set("data_b64", Base64Encode(s.data));
  if (s.gap_from) {
    json::Object gap;
    gap.Set("from", *s.gap_from);
    gap.Set("to", s.from);
    o.Set("gap", std::move(gap));
  }
  return o;
}

Result<std::optional<OutputSlice>> DecodeSlice(const json::Value& doc, std::string_view key) {
  const json::Value* v = doc.Find(key);
  if (!v || v->is_null()) return std::optional<OutputSlice>();
  OutputSlice s;
  const json::Value* data = v->Find("data_b64");
  std::optional<std::string> bytes =
      data && data->is_string() ? Base64Decode(data->as_string()) : std::nullopt;
  if (!GetU64(*v, "from", &s.from) || !GetU64(*v, "next", &s.next) || !bytes) {
    return ProtocolError("bad \"" + std::string(key) + "\" slice");
  }
  s.data = std::move(*bytes);
  if (const json::Value* gap = v->Find("gap"); gap && gap->is_object()) {
    uint64_t from = 0;
    if (GetU64(*gap, "from", &from)) s.gap_from = from;
  }
  return std::optional<OutputSlice>(std::move(s));
}

json::Object EncodeMatch(const OutputMatch& m) {
  json::Object o;
  o.Set("stream", m.stream);
  o.Set("matched", m.matched);
  if (m.matched) {
    o.Set("offset", m.offset);
    o.Set("end", m.end);
    o.Set("text", m.text);
    o.Set("text_b64", Base64Encode(m.text));
  } else {
    o.Set("reason", m.reason);
  }
  o.Set("next", m.next);
  if (m.gap_from) o.Set("gap", json::Object().Set("from", *m.gap_from).Set("to", m.gap_to));
  return o;
}

Result<std::optional<OutputMatch>> DecodeMatch(const json::Value& doc) {
  const json::Value* v = doc.Find("match");
  if (!v || v->is_null()) return std::optional<OutputMatch>();
  OutputMatch m;
  const json::Value* matched = v->Find("matched");
  std::optional<std::string> stream = GetOptString(*v, "stream");
  if (!matched || !matched->is_bool() || !stream || !GetU64(*v, "next", &m.next)) {
    return ProtocolError("bad \"match\" member");
  }
  m.stream = *stream;
  m.matched = matched->as_bool();
  if (m.matched) {
    const json::Value* b64 = v->Find("text_b64");
    std::optional<std::string> text =
        b64 && b64->is_string() ? Base64Decode(b64->as_string()) : std::nullopt;
    if (!text || !GetU64(*v, "offset", &m.offset) || !GetU64(*v, "end", &m.end)) {
      return ProtocolError("bad \"match\" member");
    }
    m.text = std::move(*text);
  } else {
    m.reason = GetOptString(*v, "reason").value_or("");
  }
  if (const json::Value* gap = v->Find("gap"); gap && gap->is_object()) {
    uint64_t from = 0;
    if (GetU64(*gap, "from", &from)) m.gap_from = from;
    GetU64(*gap, "to", &m.gap_to);
  }
  return std::optional<OutputMatch>(std::move(m));
}

}  // namespace

json::Object EncodeExecInfoObject(const ExecInfo& e) {
  json::Object o;
  o.Set("id", e.id);
  o.Set("state", e.running ? "running" : "exited");
  o.Set("pid", e.pid);
  o.Set("exit_code", OptInt(e.exit_code));
  o.Set("signal", OptString(e.signal));
  o.Set("timed_out", e.timed_out);
  o.Set("killed_by", OptString(e.killed_by));
  o.Set("started_at", e.started_at);
  o.Set("ended_at", OptString(e.ended_at));
  o.Set("duration_ms", e.duration_ms);
  o.Set("stdout_bytes", e.stdout_bytes);
  o.Set("stderr_bytes", e.stderr_bytes);
  o.Set("stdout_retained_from", e.stdout_retained_from);
  o.Set("stderr_retained_from", e.stderr_retained_from);
  o.Set("acked", e.acked);
  o.Set("error", OptString(e.error));
  if (e.limit) o.Set("limit", EncodeLimitHit(*e.limit));
  if (e.limit_timeout_sec || !e.limits.empty()) {
    json::Object limits;
    if (e.limit_timeout_sec) limits.Set("timeout_sec", *e.limit_timeout_sec);
    WriteExecLimits(limits, e.limits);
    o.Set("limits", std::move(limits));
  }
  o.Set("profile", e.profile);
  if (e.restriction) o.Set("restriction", EncodeExecRestriction(*e.restriction));
  if (e.network) o.Set("network", *e.network);
  if (e.egress) o.Set("egress", EncodeEgressPolicy(*e.egress));
  return o;
}

json::Value EncodeExecInfo(const ExecInfo& e) { return EncodeExecInfoObject(e); }

Result<ExecInfo> DecodeExecInfo(const json::Value& doc) {
  ExecInfo e;
  const json::Value* id = doc.Find("id");
  const json::Value* state = doc.Find("state");
  if (!id || !id->is_string() || !state || !state->is_string()) {
    return ProtocolError("exec object lacks \"id\" or \"state\"");
  }
  e.id = id->as_string();
  e.running = state->as_string() == "running";
  if (const json::Value* v = doc.Find("pid"); v && v->is_int()) e.pid = v->as_int();
  if (const json::Value* v = doc.Find("exit_code"); v && v->is_int()) e.exit_code = v->as_int();
  e.signal = GetOptString(doc, "signal");
  if (const json::Value* v = doc.Find("timed_out"); v && v->is_bool()) e.timed_out = v->as_bool();
  e.killed_by = GetOptString(doc, "killed_by");
  e.started_at = GetOptString(doc, "started_at").value_or("");
  e.ended_at = GetOptString(doc, "ended_at");
  if (const json::Value* v = doc.Find("duration_ms"); v && v->is_int()) {
    e.duration_ms = v->as_int();
  }
  GetU64(doc, "stdout_bytes", &e.stdout_bytes);
  GetU64(doc, "stderr_bytes", &e.stderr_bytes);
  GetU64(doc, "stdout_retained_from", &e.stdout_retained_from);
  GetU64(doc, "stderr_retained_from", &e.stderr_retained_from);
  if (const json::Value* v = doc.Find("acked"); v && v->is_bool()) e.acked = v->as_bool();
  e.error = GetOptString(doc, "error");
  e.limit = DecodeLimitHit(doc.Find("limit"));
  if (const json::Value* limits = doc.Find("limits"); limits && limits->is_object()) {
    if (const json::Value* t = limits->Find("timeout_sec"); t && t->is_int()) {
      e.limit_timeout_sec = t->as_int();
    }
    e.limits = ParseExecLimits(*limits);
  }
  // Records written before profiles existed ran unrestricted.
  e.profile = GetOptString(doc, "profile").value_or(kProfileUnrestricted);
  e.restriction = DecodeExecRestriction(doc.Find("restriction"));
  e.network = GetOptString(doc, "network");
  if (const json::Value* x = doc.Find("egress"); x && x->is_object()) {
    Result<EgressPolicy> p = DecodeEgressPolicy(*x, /*answer=*/true);
    if (p.ok()) e.egress = std::move(*p);
  }
  return e;
}

json::Value EncodeExecPollResponse(const ExecPollResponse& r) {
  json::Object o = EncodeExecInfoObject(r.exec);
  if (r.stdout_slice) o.Set("stdout", EncodeSlice(*r.stdout_slice));
  if (r.stderr_slice) o.Set("stderr", EncodeSlice(*r.stderr_slice));
  if (r.match) o.Set("match", EncodeMatch(*r.match));
  return o;
}

Result<ExecPollResponse> DecodeExecPollResponse(const json::Value& doc) {
  ExecPollResponse r;
  Result<ExecInfo> info = DecodeExecInfo(doc);
  if (!info.ok()) return info.status();
  r.exec = std::move(*info);
  Result<std::optional<OutputSlice>> out = DecodeSlice(doc, "stdout");
  if (!out.ok()) return out.status();
  Result<std::optional<OutputSlice>> err = DecodeSlice(doc, "stderr");
  if (!err.ok()) return err.status();
  r.stdout_slice = std::move(*out);
  r.stderr_slice = std::move(*err);
  Result<std::optional<OutputMatch>> match = DecodeMatch(doc);
  if (!match.ok()) return match.status();
  r.match = std::move(*match);
  return r;
}

json::Value EncodeExecList(const std::vector<ExecInfo>& execs) {
  json::Array items;
  items.reserve(execs.size());
  for (const ExecInfo& e : execs) items.push_back(EncodeExecInfo(e));
  json::Object o;
  o.Set("execs", std::move(items));
  return o;
}

Result<std::vector<ExecInfo>> DecodeExecList(const json::Value& doc) {
  const json::Value* items = doc.Find("execs");
  if (!items || !items->is_array()) return ProtocolError("list lacks \"execs\"");
  std::vector<ExecInfo> out;
  for (const json::Value& item : items->as_array()) {
    Result<ExecInfo> e = DecodeExecInfo(item);
    if (!e.ok()) return e.status();
    out.push_back(std::move(*e));
  }
  return out;
}

Result<KillRequest> DecodeKillRequest(const json::Value& doc) {
  KillRequest req;
  if (doc.is_null()) return req;
  ObjectReader r(doc);
  req.signal = r.String("signal");
  req.grace_sec = r.Int("grace_sec", 0, kMaxKillGraceSec);
  AGENTD_RETURN_IF_ERROR(r.Finish());
  return req;
}

json::Value EncodeKillRequest(const KillRequest& req) {
  json::Object o;
  if (req.signal) o.Set("signal", *req.signal);
  if (req.grace_sec) o.Set("grace_sec", *req.grace_sec);
  return o;
}

Result<ResizeRequest> DecodeResizeRequest(const json::Value& doc) {
  ObjectReader r(doc);
  std::optional<int64_t> rows = r.Int("rows", 1, kMaxPtyDimension);
  std::optional<int64_t> cols = r.Int("cols", 1, kMaxPtyDimension);
  r.Require("rows", rows.has_value());
  r.Require("cols", cols.has_value());
  AGENTD_RETURN_IF_ERROR(r.Finish());
  return ResizeRequest{*rows, *cols};
}

json::Value EncodeResizeRequest(const ResizeRequest& req) {
  json::Object o;
  o.Set("rows", req.rows);
  o.Set("cols", req.cols);
  return o;
}

json::Value EncodeStdinResponse(const StdinResponse& r) {
  json::Object o;
  o.Set("next", r.next);
  return o;
}

Result<StdinResponse> DecodeStdinResponse(const json::Value& doc) {
  StdinResponse r;
  if (!GetU64(doc, "next", &r.next)) return ProtocolError("stdin answer lacks \"next\"");
  return r;
}

std::string FormatExecEventId(uint64_t stdout_next, uint64_t stderr_next) {
  return std::to_string(stdout_next) + ":" + std::to_string(stderr_next);
}

std::optional<std::pair<uint64_t, uint64_t>> ParseExecEventId(std::string_view id) {
  size_t colon = id.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto parse = [](std::string_view s, uint64_t* out) {
    if (s.empty() || s.size() > 19) return false;  // digits only, no sign, fits int64
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && end == s.data() + s.size();
  };
  std::pair<uint64_t, uint64_t> out;
  if (!parse(id.substr(0, colon), &out.first) || !parse(id.substr(colon + 1), &out.second)) {
    return std::nullopt;
  }
  return out;
}

void AppendOutputEventData(std::string& out, uint64_t offset, std::string_view bytes) {
  out += "{\"offset\":";
  out += std::to_string(offset);
  out += ",\"data_b64\":\"";
  AppendBase64(out, bytes);  // the base64 alphabet needs no JSON escaping
  out += "\"}";
}

std::string GapEventData(std::string_view stream, uint64_t from, uint64_t to) {
  json::Object o;
  o.Set("stream", std::string(stream));
  o.Set("from", from);
  o.Set("to", to);
  return json::Serialize(o);
}

}  // namespace agentd
