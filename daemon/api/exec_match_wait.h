// The poll with until=match (docs/PROTOCOL.md, "Wait for output"): waits
// until a regular expression matches an exec's output from a cursor, the
// exec has ended without a match, or wait_ms passes, then answers the
// usual poll body plus a "match" member. Woken by the output pump's
// change signal (no polling); read-only like every poll. Used only on the
// io thread.
#pragma once

#include <asio.hpp>
#include <memory>

#include "api/api_context.h"
#include "api/exec_poll_answer.h"
#include "exec/exec_view.h"
#include "server/request.h"
#include "server/response.h"

namespace agentd {

// A match and any begun match must fit in this many bytes.
inline constexpr size_t kMatchWindowBytes = 1 << 20;
// One answer scans at most this many bytes of output (a begun match is
// re-scanned as it grows) before it answers "scan_limit" with a cursor to
// resume from: the io thread is never held by one wait for long.
inline constexpr uint64_t kMatchScanBytes = 64 << 20;

asio::awaitable<void> AnswerMatchPoll(ApiContext& ctx, Request& req, ExecView exec,
                                      const PollQuery& q, Response& res);

}  // namespace agentd
