// Contexts (docs/PROTOCOL.md, "Contexts"): a persistent interpreter a
// caller creates once and runs code in many times, its state (variables,
// imports) kept between runs. The create and run requests and the context
// object. A context run answers exactly a RunResponse (run.h). Shared by
// the daemon and the client library. No I/O; plain data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "agentd/protocol/json.h"
#include "agentd/protocol/limits.h"
#include "agentd/protocol/run.h"
#include "agentd/protocol/status.h"

namespace agentd {

// A context run's code, in bytes.
inline constexpr size_t kMaxContextCodeBytes = 1 << 20;
// A run_id: the characters and length of an exec id.
inline constexpr size_t kMaxRunIdBytes = 128;

// POST /v1/contexts: `spec` is a run request without code, stdin or
// timeout (those belong to each run): runtime, cwd, env, user, group,
// limits, network, profile, result_marker, scan_changes.
struct ContextCreateRequest {
  std::string id;  // caller-minted, the rules of an exec id
  RunRequest spec;
};
Result<ContextCreateRequest> DecodeContextCreateRequest(const json::Value& doc);
json::Value EncodeContextCreateRequest(const ContextCreateRequest& req);

// POST /v1/contexts/{id}/run.
struct ContextRunRequest {
  std::string code;
  std::optional<int64_t> timeout_sec;        // as asked; clamped to kMaxRunTimeoutSec
  std::optional<std::string> run_id;         // a retry with it replays the answer
  std::optional<std::string> artifacts_dir;  // as in a run request
  // Must be the context's policy when given (the programs on its cgroup
  // hold for its life); another one is refused naming both.
  std::optional<EgressPolicy> egress;
};
Result<ContextRunRequest> DecodeContextRunRequest(const json::Value& doc);
json::Value EncodeContextRunRequest(const ContextRunRequest& req);

// The context object.
struct ContextInfo {
  std::string id;
  std::string runtime;
  std::string state;  // "ready" | "running" | "ended"
  std::string cwd;
  int64_t pid = 0;
  int64_t runs = 0;  // runs answered (replays not counted)
  std::string created_at;
  std::string profile = kProfileUnrestricted;
  std::optional<std::string> network;
  // Once ended: what ended it ("limit", "exited", "reset", "deleted") and
  // the limit that killed the interpreter, as in a run answer.
  std::optional<std::string> ended_reason;
  std::optional<std::string> killed_by;
  std::optional<LimitHit> limit;
};
json::Object EncodeContextInfo(const ContextInfo& c);
Result<ContextInfo> DecodeContextInfo(const json::Value& doc);

}  // namespace agentd
