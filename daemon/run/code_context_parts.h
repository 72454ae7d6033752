// CodeContext's runs and answers (run/code_context.h), for the files
// that build a context other than by Start(): after an upgrade
// (run/context_handover.cc) or a crash (run/context_takeback.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "agentd/protocol/context.h"
#include "exec/change_signal.h"
#include "run/code_context.h"
#include "spool/output_log.h"

namespace agentd {

// Looks for a cell's `token` in [*at, log.next()) and moves *at past what
// it read (keeping a token's length of overlap). Returns its offset if found.
std::optional<uint64_t> FindCellToken(const OutputLog& log, const std::string& token, uint64_t* at);

struct CodeContext::Pending {
  ContextRunRequest request;
  std::string digest;  // of the code: a retry must carry the same
  bool done = false;
  // Encoded once, as the route sends it: kept so for retries and upgrades.
  Result<json::Value> answer = Status::Error(ErrorCode::kInternal, "not answered");
  std::optional<LostRun> lost;  // cut by a crash: its 410 run_lost says this
  ChangeSignal signal;
};

struct CodeContext::Reply {
  std::string token;
  int64_t seq = -1;     // the cell the answer is for (-1: the driver did not say)
  bool done = false;    // an answer arrived (else: failed, see `failed`)
  bool failed = false;  // the socket broke or the answer was malformed
  int64_t exit_code = 0;
  std::optional<RunException> exception;
  bool out_marked = false;
  bool err_marked = false;
};

}  // namespace agentd
