#include "agentd/protocol/edit.h"

#include <limits>

#include "agentd/protocol/object_reader.h"

namespace agentd {
namespace {

constexpr int64_t kMaxNumber = std::numeric_limits<int64_t>::max();

// One member of "edits" or "line_edits"; problems name "edits[i].field".
template <typename T, typename Fn>
Status ReadArray(ObjectReader& outer, const char* key, std::vector<T>* out, Fn read_one) {
  const json::Value* arr = outer.Raw(key);
  if (!arr) return Status::Ok();
  if (!arr->is_array()) {
    return std::move(
        Status::InvalidRequest(std::string(key) + " must be an array").With("field", key));
  }
  if (arr->as_array().size() > kMaxEditsPerRequest) {
    return std::move(Status::InvalidRequest(std::string(key) + " has more than " +
                                            std::to_string(kMaxEditsPerRequest) + " entries")
                         .With("field", key)
                         .With("limit", kMaxEditsPerRequest));
  }
  for (size_t i = 0; i < arr->as_array().size(); ++i) {
    ObjectReader r(arr->as_array()[i]);
    T item;
    read_one(r, item);
    Status s = r.Finish();
    if (!s.ok()) {
      const json::Value* field = s.details().Find("field");
      std::string name = std::string(key) + "[" + std::to_string(i) + "]";
      if (field && field->is_string()) name += "." + field->as_string();
      return std::move(s.With("field", name));
    }
    out->push_back(std::move(item));
  }
  return Status::Ok();
}

}  // namespace

Result<EditRequest> DecodeEditRequest(const json::Value& doc) {
  ObjectReader r(doc);
  EditRequest req;
  std::optional<std::string> path = r.String("path");
  r.Require("path", path.has_value());
  req.if_match = r.String("if_match");
  Status edits = ReadArray(r, "edits", &req.edits, [](ObjectReader& e, TextEdit& out) {
    std::optional<std::string> old_text = e.String("old");
    std::optional<std::string> new_text = e.String("new");
    e.Require("old", old_text.has_value());
    e.Require("new", new_text.has_value());
    if (old_text && old_text->empty()) e.Fail("old", "old must not be empty");
    out.count = static_cast<uint64_t>(e.Int("count", 1, kMaxNumber).value_or(1));
    out.old_text = old_text.value_or("");
    out.new_text = new_text.value_or("");
  });
  Status lines = ReadArray(r, "line_edits", &req.line_edits, [](ObjectReader& e, LineEdit& out) {
    std::optional<int64_t> start = e.Int("start_line", 1, kMaxNumber);
    std::optional<int64_t> end = e.Int("end_line", 0, kMaxNumber);
    std::optional<std::string> text = e.String("text");
    e.Require("start_line", start.has_value());
    e.Require("end_line", end.has_value());
    e.Require("text", text.has_value());
    if (start && end && *end + 1 < *start) {
      e.Fail("end_line", "end_line must be at least start_line - 1 (an insertion)");
    }
    out.start_line = static_cast<uint64_t>(start.value_or(1));
    out.end_line = static_cast<uint64_t>(end.value_or(0));
    out.text = text.value_or("");
  });
  AGENTD_RETURN_IF_ERROR(r.Finish());
  AGENTD_RETURN_IF_ERROR(edits);
  AGENTD_RETURN_IF_ERROR(lines);
  if (req.edits.empty() && req.line_edits.empty()) {
    return std::move(Status::InvalidRequest("an edit needs at least one of edits and line_edits")
                         .With("field", "edits"));
  }
  req.path = std::move(*path);
  return req;
}

json::Value EncodeEditRequest(const EditRequest& req) {
  json::Object o;
  o.Set("path", req.path);
  if (!req.edits.empty()) {
    json::Array edits;
    for (const TextEdit& e : req.edits) {
      json::Object one;
      one.Set("old", e.old_text);
      one.Set("new", e.new_text);
      one.Set("count", e.count);
      edits.push_back(std::move(one));
    }
    o.Set("edits", std::move(edits));
  }
  if (!req.line_edits.empty()) {
    json::Array lines;
    for (const LineEdit& e : req.line_edits) {
      json::Object one;
      one.Set("start_line", e.start_line);
      one.Set("end_line", e.end_line);
      one.Set("text", e.text);
      lines.push_back(std::move(one));
    }
    o.Set("line_edits", std::move(lines));
  }
  if (req.if_match) o.Set("if_match", *req.if_match);
  return o;
}

json::Value EncodeEditResponse(const EditResponse& r) {
  json::Object o;
  o.Set("path", r.path);
  o.Set("etag", r.etag);
  o.Set("size", r.size);
  o.Set("diff", r.diff);
  return o;
}

Result<EditResponse> DecodeEditResponse(const json::Value& doc) {
  const json::Value* path = doc.Find("path");
  const json::Value* etag = doc.Find("etag");
  const json::Value* size = doc.Find("size");
  const json::Value* diff = doc.Find("diff");
  if (!path || !path->is_string() || !etag || !etag->is_string() || !size || !size->is_int() ||
      size->as_int() < 0 || !diff || !diff->is_string()) {
    return Status::Error(ErrorCode::kProtocolError, "edit answer lacks a member");
  }
  return EditResponse{path->as_string(), etag->as_string(), static_cast<uint64_t>(size->as_int()),
                      diff->as_string()};
}

}  // namespace agentd
