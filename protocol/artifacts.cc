// Artifacts of a code run (docs/PROTOCOL.md, "Run code", "artifacts").
#include "agentd/protocol/artifacts.h"

namespace agentd {

Status ValidateArtifactsDir(const std::string& dir, std::string_view field) {
  auto refuse = [&](const std::string& why) {
    return Status::InvalidRequest("field \"" + std::string(field) + "\" " + why)
        .With("field", std::string(field));
  };
  if (dir.empty() || dir.size() > kMaxArtifactsDirBytes) {
    return refuse("must be 1 to " + std::to_string(kMaxArtifactsDirBytes) + " bytes, not " +
                  std::to_string(dir.size()));
  }
  if (dir.find('\0') != std::string::npos) return refuse("must not contain NUL");
  if (dir.front() == '/') return refuse("must be relative to the run's cwd");
  size_t start = 0;
  while (start <= dir.size()) {
    size_t end = dir.find('/', start);
    if (end == std::string::npos) end = dir.size();
    if (dir.compare(start, end - start, "..") == 0) return refuse("must not contain \"..\"");
    start = end + 1;
  }
  return Status::Ok();
}

void SetArtifacts(json::Object& o, const ArtifactList& list) {
  json::Array items;
  for (const Artifact& a : list.items) {
    json::Object item;
    item.Set("path", a.path);
    item.Set("media_type", a.media_type);
    item.Set("bytes", a.bytes);
    item.Set("sha256", a.sha256 ? json::Value(*a.sha256) : json::Value());
    items.push_back(std::move(item));
  }
  o.Set("artifacts", std::move(items));
  o.Set("artifacts_truncated", list.truncated);
  o.Set("artifacts_bound", list.bound ? EncodeLimitHit(*list.bound) : json::Value());
}

std::optional<ArtifactList> DecodeArtifacts(const json::Value& doc) {
  const json::Value* items = doc.Find("artifacts");
  if (!items || !items->is_array()) return std::nullopt;
  ArtifactList list;
  for (const json::Value& item : items->as_array()) {
    Artifact a;
    if (const json::Value* v = item.Find("path"); v && v->is_string()) a.path = v->as_string();
    if (const json::Value* v = item.Find("media_type"); v && v->is_string()) {
      a.media_type = v->as_string();
    }
    if (const json::Value* v = item.Find("bytes"); v && v->is_int() && v->as_int() >= 0) {
      a.bytes = static_cast<uint64_t>(v->as_int());
    }
    if (const json::Value* v = item.Find("sha256"); v && v->is_string()) a.sha256 = v->as_string();
    list.items.push_back(std::move(a));
  }
  if (const json::Value* v = doc.Find("artifacts_truncated"); v && v->is_bool()) {
    list.truncated = v->as_bool();
  }
  list.bound = DecodeLimitHit(doc.Find("artifacts_bound"));
  return list;
}

}  // namespace agentd
