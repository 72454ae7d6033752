// Shared pieces of the exec routes (docs/PROTOCOL.md, "Exec"): the
// documented ranges of their query parameters, cursor checks, and the
// registration function of each route file. Used only on the io thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "agentd/protocol/status.h"
#include "api/api_context.h"
#include "api/query_reader.h"
#include "exec/exec_engine.h"
#include "server/router.h"

namespace agentd {

// Bounds of the exec routes' query parameters.
inline constexpr uint64_t kDefaultPollMaxBytes = 1 << 20;
inline constexpr uint64_t kMaxPollMaxBytes = 8 << 20;
inline constexpr uint64_t kMaxWaitMs = 300'000;
// A stream that sent nothing for this long sends a comment.
inline constexpr std::chrono::seconds kKeepaliveInterval{15};
// Bytes of output carried by one SSE event at most.
inline constexpr uint64_t kMaxEventBytes = 128 * 1024;

// 400 invalid_request when a cursor is past the end of its stream.
Status CheckCursor(std::string_view field, uint64_t cursor, const OutputLog& log);

void RegisterExecStartRoutes(Router& router, ExecEngine& engine);
void RegisterExecPollRoutes(Router& router, ApiContext& ctx, ExecEngine& engine);
void RegisterExecOutputRoutes(Router& router, ExecEngine& engine);
void RegisterExecEventRoutes(Router& router, ExecEngine& engine);
void RegisterExecControlRoutes(Router& router, ExecEngine& engine);

}  // namespace agentd
