// Shared pieces of the exec routes (docs/PROTOCOL.md, "Exec"): query
// parameter parsing with the documented ranges, cursor checks, and the
// registration function of each route file. Used only on the io thread.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "agentd/protocol/status.h"
#include "api/api_context.h"
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

// An unsigned integer query parameter in [min, max]; nullopt when absent.
// Anything else is 400 invalid_request naming the parameter and the range.
Result<std::optional<uint64_t>> QueryNumber(const Request& req, std::string_view name, uint64_t min,
                                            uint64_t max);
// A 0/1 flag; absent is false.
Result<bool> QueryFlag(const Request& req, std::string_view name);
// One of `choices`; nullopt when absent; anything else is 400
// invalid_request naming the parameter and the choices.
Result<std::optional<std::string>> QueryChoice(const Request& req, std::string_view name,
                                               std::initializer_list<std::string_view> choices);

// 400 invalid_request when a cursor is past the end of its stream.
Status CheckCursor(std::string_view field, uint64_t cursor, const OutputLog& log);

void RegisterExecStartRoutes(Router& router, ExecEngine& engine);
void RegisterExecPollRoutes(Router& router, ExecEngine& engine);
void RegisterExecOutputRoutes(Router& router, ExecEngine& engine);
void RegisterExecEventRoutes(Router& router, ExecEngine& engine);
void RegisterExecControlRoutes(Router& router, ExecEngine& engine);

}  // namespace agentd
