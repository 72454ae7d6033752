#include "exec/group_state.h"

namespace agentd {
namespace {

std::string StringOr(const json::Object& o, std::string_view key) {
  const json::Value* v = o.Find(key);
  return v && v->is_string() ? v->as_string() : std::string();
}

}  // namespace

json::Object EncodeGroupState(const GroupPaths& g, uint64_t seq) {
  json::Array dirs;
  for (const std::string& d : g.dirs) dirs.emplace_back(d);
  return json::Object()
      .Set("mechanism", g.mechanism)
      .Set("dirs", std::move(dirs))
      .Set("memory_dir", g.memory_dir)
      .Set("pids_dir", g.pids_dir)
      .Set("cpu_usage_file", g.cpu_usage_file)
      .Set("seq", static_cast<int64_t>(seq));
}

GroupPaths DecodeGroupState(const json::Object& o) {
  GroupPaths g;
  g.mechanism = StringOr(o, "mechanism");
  if (const json::Value* dirs = o.Find("dirs"); dirs && dirs->is_array()) {
    for (const json::Value& d : dirs->as_array()) {
      if (d.is_string()) g.dirs.push_back(d.as_string());
    }
  }
  g.memory_dir = StringOr(o, "memory_dir");
  g.pids_dir = StringOr(o, "pids_dir");
  g.cpu_usage_file = StringOr(o, "cpu_usage_file");
  return g;
}

uint64_t GroupStateSeq(const json::Object& o) {
  const json::Value* v = o.Find("seq");
  return v && v->is_int() && v->as_int() > 0 ? static_cast<uint64_t>(v->as_int()) : 0;
}

}  // namespace agentd
