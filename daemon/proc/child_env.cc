#include "proc/child_env.h"

#include <optional>
#include <utility>

namespace agentd {
namespace {

using Vars = std::vector<std::pair<std::string, std::string>>;

void Set(Vars& vars, std::string_view name, std::string value) {
  for (auto& [k, v] : vars) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  vars.emplace_back(std::string(name), std::move(value));
}

void Unset(Vars& vars, std::string_view name) {
  std::erase_if(vars, [&](const auto& kv) { return kv.first == name; });
}

}  // namespace

std::vector<std::string> BuildChildEnv(const char* const* daemon_env, const EnvList& launch_env,
                                       const Credentials* identity, const EnvOverlay& request_env) {
  Vars vars;
  for (const char* const* e = daemon_env; e && *e; ++e) {
    std::string_view entry = *e;
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    std::string_view name = entry.substr(0, eq);
    if (name.starts_with("AGENTD_")) continue;
    Set(vars, name, std::string(entry.substr(eq + 1)));
  }
  for (const auto& [k, v] : launch_env) Set(vars, k, v);
  if (identity && identity->uid) {
    Set(vars, "HOME", identity->home);
    Set(vars, "USER", identity->user_name);
    Set(vars, "LOGNAME", identity->user_name);
  }
  for (const auto& [k, v] : request_env) {
    if (v) {
      Set(vars, k, *v);
    } else {
      Unset(vars, k);
    }
  }
  std::vector<std::string> out;
  out.reserve(vars.size());
  for (auto& [k, v] : vars) out.push_back(k + "=" + v);
  return out;
}

void SetEnv(std::vector<std::string>& env, std::string_view name, std::string_view value) {
  std::string entry = std::string(name) + "=" + std::string(value);
  for (std::string& e : env) {
    if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=') {
      e = std::move(entry);
      return;
    }
  }
  env.push_back(std::move(entry));
}

const std::string* FindEnv(const std::vector<std::string>& env, std::string_view name,
                           std::string* value_out) {
  for (const std::string& entry : env) {
    if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
        entry[name.size()] == '=') {
      if (value_out) *value_out = entry.substr(name.size() + 1);
      return &entry;
    }
  }
  return nullptr;
}

}  // namespace agentd
