// The poll answer (docs/PROTOCOL.md, "Poll"): its query, the wait for
// news, and the snapshot of the exec and its output. Shared by the poll
// route and by a start that asks to wait (Start's "start and wait").
// Used only on the io thread.
#pragma once

#include <asio.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "agentd/protocol/status.h"
#include "api/query_reader.h"
#include "exec/exec_view.h"
#include "server/request.h"
#include "server/response.h"

namespace agentd {

// until=match (docs/PROTOCOL.md, "Wait for output").
struct MatchQuery {
  std::string pattern;
  Stream stream = Stream::kStdout;
  uint64_t cursor = 0;
};

struct PollQuery {
  std::optional<uint64_t> cursors[2];  // stdout_from, stderr_from
  uint64_t max_bytes = 0;
  uint64_t wait_ms = 0;
  bool until_exit = false;          // until=exit: output alone does not end the wait
  bool given = false;               // any of the parameters was in the query
  std::optional<MatchQuery> match;  // until=match
};

// The parameters with their documented ranges; a problem is recorded in
// `q` (its Finish() reports it). `allow_match`: until=match and its
// parameters are accepted (the poll route; not a start).
PollQuery ReadPollQuery(QueryReader& q, bool allow_match);

// 400 invalid_request (with `next`) when a cursor is past its stream's end.
Status CheckPollCursors(const ExecView& exec, const PollQuery& q);
// The exec object and the slices asked for, as they are now.
Result<ExecPollResponse> PollSnapshot(const ExecView& exec, const PollQuery& q);

// Checks the cursors against the streams (400 invalid_request with
// `next` for one past the end), waits up to wait_ms for news (a byte past
// a cursor, or the exec's end), and answers `status` with the exec object
// and the slices asked for.
asio::awaitable<void> AnswerPoll(const ExecView& exec, const PollQuery& q, int status,
                                 Response& res);

}  // namespace agentd
