#include "agentd/protocol/reset.h"

#include "agentd/protocol/object_reader.h"

namespace agentd {
namespace {

bool ValidResetId(const std::string& id) {
  if (id.empty() || id.size() > kMaxResetIdBytes) return false;
  for (char c : id) {
    if (c <= 0x20 || c >= 0x7F) return false;
  }
  return true;
}

Status MalformedReset(std::string what) {
  return Status::Error(ErrorCode::kProtocolError, "reset answer: " + std::move(what));
}

Status IntOf(const json::Value* v, std::string_view key, int64_t* out) {
  if (!v || !v->is_int()) return MalformedReset("lacks integer \"" + std::string(key) + "\"");
  *out = v->as_int();
  return Status::Ok();
}

}  // namespace

Result<ResetRequest> DecodeResetRequest(const json::Value& doc) {
  ObjectReader r(doc);
  std::optional<std::string> id = r.String("reset_id");
  r.Require("reset_id", id.has_value());
  const json::Value* next = r.Raw("next");
  AGENTD_RETURN_IF_ERROR(r.Finish());
  ResetRequest req;
  req.reset_id = std::move(*id);
  if (!ValidResetId(req.reset_id)) {
    return Status::InvalidRequest("reset_id must be 1 to " + std::to_string(kMaxResetIdBytes) +
                                  " visible ASCII characters")
        .With("field", "reset_id")
        .With("max_bytes", kMaxResetIdBytes);
  }
  if (next && !next->is_null()) {
    if (!next->is_object()) {
      return Status::InvalidRequest("next must be an object {\"token\", \"env\"}")
          .With("field", "next");
    }
    Result<BootstrapRequest> decoded = DecodeBootstrapRequest(*next);
    if (!decoded.ok()) {
      Status s = decoded.status();
      return Status::InvalidRequest("next: " + s.message()).With("field", "next");
    }
    req.next = std::move(*decoded);
  }
  return req;
}

json::Value EncodeResetRequest(const ResetRequest& req) {
  json::Object o;
  o.Set("reset_id", req.reset_id);
  if (req.next) o.Set("next", EncodeBootstrapRequest(*req.next));
  return o;
}

json::Value EncodeResetReport(const ResetReport& r) {
  json::Array remaining;
  for (const ResetRemaining& item : r.remaining) {
    remaining.emplace_back(
        json::Object().Set("kind", item.kind).Set("name", item.name).Set("reason", item.reason));
  }
  json::Object o;
  o.Set("clean", r.clean);
  o.Set("generation", r.generation);
  o.Set("killed_processes", r.killed_processes);
  o.Set("removed", json::Object()
                       .Set("entries", r.removed_entries)
                       .Set("bytes", r.removed_bytes)
                       .Set("ipc_objects", r.removed_ipc_objects));
  o.Set("remaining", std::move(remaining));
  o.Set("duration_ms", r.duration_ms);
  o.Set("replayed", r.replayed);
  o.Set("privileged_generation", r.privileged_generation);
  return o;
}

Result<ResetReport> DecodeResetReport(const json::Value& doc) {
  if (!doc.is_object()) return MalformedReset("not an object");
  ResetReport r;
  const json::Value* clean = doc.Find("clean");
  if (!clean || !clean->is_bool()) return MalformedReset("lacks \"clean\"");
  r.clean = clean->as_bool();
  AGENTD_RETURN_IF_ERROR(IntOf(doc.Find("generation"), "generation", &r.generation));
  AGENTD_RETURN_IF_ERROR(
      IntOf(doc.Find("killed_processes"), "killed_processes", &r.killed_processes));
  AGENTD_RETURN_IF_ERROR(IntOf(doc.Find("duration_ms"), "duration_ms", &r.duration_ms));
  const json::Value* removed = doc.Find("removed");
  if (!removed || !removed->is_object()) return MalformedReset("lacks \"removed\"");
  AGENTD_RETURN_IF_ERROR(IntOf(removed->Find("entries"), "removed.entries", &r.removed_entries));
  AGENTD_RETURN_IF_ERROR(IntOf(removed->Find("bytes"), "removed.bytes", &r.removed_bytes));
  // Added in protocol 1.x: an older daemon does not send it.
  if (const json::Value* ipc = removed->Find("ipc_objects")) {
    AGENTD_RETURN_IF_ERROR(IntOf(ipc, "removed.ipc_objects", &r.removed_ipc_objects));
  }
  if (const json::Value* replayed = doc.Find("replayed"); replayed && replayed->is_bool()) {
    r.replayed = replayed->as_bool();
  }
  if (const json::Value* p = doc.Find("privileged_generation"); p && p->is_bool()) {
    r.privileged_generation = p->as_bool();
  }
  const json::Value* remaining = doc.Find("remaining");
  if (!remaining || !remaining->is_array()) return MalformedReset("lacks \"remaining\"");
  for (const json::Value& item : remaining->as_array()) {
    ResetRemaining one;
    for (auto [key, field] : {std::pair{"kind", &one.kind}, std::pair{"name", &one.name},
                              std::pair{"reason", &one.reason}}) {
      const json::Value* v = item.Find(key);
      if (v && v->is_string()) *field = v->as_string();
    }
    r.remaining.push_back(std::move(one));
  }
  return r;
}

}  // namespace agentd
