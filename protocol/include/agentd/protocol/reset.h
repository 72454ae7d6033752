// Reset bodies (docs/PROTOCOL.md, "Reuse"): POST /v1/reset returns a guest
// to its golden state between tenants and proves it, or quarantines it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agentd/protocol/bootstrap.h"
#include "agentd/protocol/json.h"
#include "agentd/protocol/status.h"

namespace agentd {

// A reset id is minted by the caller: 1 to 128 visible ASCII characters.
inline constexpr size_t kMaxResetIdBytes = 128;

struct ResetRequest {
  std::string reset_id;
  // The next tenant's token and launch env, installed in the same step;
  // without it the daemon reopens bootstrap.
  std::optional<BootstrapRequest> next;
};
Result<ResetRequest> DecodeResetRequest(const json::Value& doc);
json::Value EncodeResetRequest(const ResetRequest& req);

// One thing the reset found left over from the previous generation.
struct ResetRemaining {
  std::string kind;    // "process", "path", "ipc", "privilege"
  std::string name;    // a pid and command, or a path
  std::string reason;  // why it is still there
};

struct ResetReport {
  bool clean = false;
  int64_t generation = 0;
  int64_t killed_processes = 0;
  int64_t removed_entries = 0;
  int64_t removed_bytes = 0;
  int64_t removed_ipc_objects = 0;  // System V IPC objects (0 unless the sweep is on)
  std::vector<ResetRemaining> remaining;
  int64_t duration_ms = 0;
  bool replayed = false;  // the recorded report of an earlier attempt
  // An exec of the generation reset ran unrestricted as root: nothing the
  // reset checks proves what it changed (docs/SECURITY.md).
  bool privileged_generation = false;
};
json::Value EncodeResetReport(const ResetReport& r);
Result<ResetReport> DecodeResetReport(const json::Value& doc);

}  // namespace agentd
