// The poll answer (docs/PROTOCOL.md, "Poll"): its query, the wait for
// news, and the snapshot of the exec and its output. Shared by the poll
// route and by a start that asks to wait (Start's "start and wait").
// Used only on the io thread.
#pragma once

#include <asio.hpp>
#include <cstdint>
#include <optional>

#include "agentd/protocol/status.h"
#include "api/query_reader.h"
#include "exec/exec_record.h"
#include "server/request.h"
#include "server/response.h"

namespace agentd {

struct PollQuery {
  std::optional<uint64_t> cursors[2];  // stdout_from, stderr_from
  uint64_t max_bytes = 0;
  uint64_t wait_ms = 0;
  bool until_exit = false;  // until=exit: output alone does not end the wait
  bool given = false;       // any of the parameters was in the query
};

// The parameters with their documented ranges; a problem is recorded in
// `q` (its Finish() reports it).
PollQuery ReadPollQuery(QueryReader& q);

// Checks the cursors against the streams (400 invalid_request with
// `next` for one past the end), waits up to wait_ms for news (a byte past
// a cursor, or the exec's end), and answers `status` with the exec object
// and the slices asked for.
asio::awaitable<void> AnswerPoll(ExecRecord& rec, const PollQuery& q, int status, Response& res);

}  // namespace agentd
