// Bootstrap and health bodies (docs/PROTOCOL.md, "Auth and bootstrap",
// "Health").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agentd/protocol/json.h"
#include "agentd/protocol/status.h"

namespace agentd {

// The whole bootstrap body (token and env together) is at most this many
// raw bytes.
inline constexpr size_t kBootstrapBudgetBytes = 4096;
// Tokens are visible ASCII (they travel in an Authorization header).
inline constexpr size_t kMaxTokenBytes = 1024;

using EnvList = std::vector<std::pair<std::string, std::string>>;

struct BootstrapRequest {
  std::string token;
  EnvList env;
};

Result<BootstrapRequest> DecodeBootstrapRequest(const json::Value& doc);
json::Value EncodeBootstrapRequest(const BootstrapRequest& req);
// Checks an environment variable name: non-empty, no '=' and no NUL.
Status ValidateEnvName(const std::string& name, std::string_view field);

struct BootstrapResponse {
  bool replayed = false;
};
json::Value EncodeBootstrapResponse(const BootstrapResponse& r);
Result<BootstrapResponse> DecodeBootstrapResponse(const json::Value& doc);

// A runtime this guest knows and cannot run (docs/PROTOCOL.md, "Health"):
// `code` is interpreter_not_found, not_executable, disabled_by_flag or
// self_test_failed; `reason` names the program and the PATH it was looked
// for in (or how its self-test failed).
struct RuntimeUnavailable {
  std::string runtime;
  std::string code;
  std::string reason;
  bool operator==(const RuntimeUnavailable&) const = default;
};

// An interpreter file's self-test (docs/PROTOCOL.md, "Health"): `state` is
// pending, passed or failed; `duration_ms` once it has ended.
struct RuntimeSelfTestState {
  std::string runtime;
  std::string program;
  std::string state;
  std::optional<int64_t> duration_ms;
  bool operator==(const RuntimeSelfTestState&) const = default;
};

struct HealthResponse {
  std::string status = "ok";
  std::string version;
  int64_t protocol = 1;
  bool bootstrapped = false;
  bool busy = false;
  int64_t execs = 0;
  int64_t uptime_ms = 0;
  std::vector<std::string> runtimes;
  std::vector<RuntimeUnavailable> runtimes_unavailable;
  std::vector<RuntimeSelfTestState> runtime_self_tests;
  // Why the daemon cannot serve (a 503 health: draining, resetting,
  // quarantined, state_dir_unwritable); absent while status is "ok".
  std::optional<std::string> reason;
  // With state_dir_unwritable: the errno name of the failed write (EROFS,
  // ENOSPC, ...). The wire field is "errno", a macro name in C++.
  std::optional<std::string> errno_name;
  json::Object extra;  // fields added after v1 (limits mechanism, ...)
};
json::Value EncodeHealthResponse(const HealthResponse& h);
Result<HealthResponse> DecodeHealthResponse(const json::Value& doc);

}  // namespace agentd
