// Helpers shared by the file and tree route groups.
#pragma once

#include <asio.hpp>
#include <functional>

#include "agentd/protocol/json.h"
#include "api/api_context.h"
#include "api/fs_service.h"
#include "fs/precondition.h"
#include "metrics/metrics.h"
#include "server/request.h"
#include "server/response.h"
#include "sys/awaitable.h"

// In a coroutine returning awaitable<void>: stop when `expr` (a Status)
// failed. (GCC 12 miscompiles "if (!(co_await f()).ok()) co_return;" into
// an illegal instruction; a named Status is fine.)
#define AGENTD_CO_RETURN_IF_ERROR_VOID(expr)  \
  do {                                        \
    ::agentd::Status agentd_status_ = (expr); \
    if (!agentd_status_.ok()) co_return;      \
  } while (0)

namespace agentd {

// What every file and tree route handler works with.
struct FsRoute {
  ApiContext& ctx;
  FsService& fs;
};

// The lexical check of a client path (nullptr: the parameter was absent,
// already reported by the QueryReader).
inline Result<RelPath> CheckPath(const FsService& fs, const std::string* path) {
  if (!path) return Status::InvalidRequest("path is required").With("field", "path");
  return fs.policy().Check(*path);
}

// If-Match / If-None-Match of `req` (fs/precondition.h).
inline Result<Precondition> PreconditionOf(const Request& req) {
  return ParsePrecondition(req.Header("if-match"), req.Header("if-none-match"));
}

// The headers an error answer carries: the current ETag with a 412.
Headers ErrorHeaders(const Status& error);

// Work for the blocking pool whose value is the answer's JSON body.
using JsonJob = std::function<Result<json::Value>()>;

// Runs `fn` on `pool` and answers 200 with its value or the error. Pass a
// named JsonJob (sys/awaitable.h caveats). One coroutine for every route
// that answers this way, rather than a template instantiated per route
// (docs/BUILDING.md, "Binary size").
asio::awaitable<void> AnswerFromPool(asio::thread_pool& pool, Response& res, JsonJob fn);

// After a refusal met mid-body, reads and discards up to this much of the
// rest of the body before answering, so a client that sends its whole body
// before reading (most HTTP libraries) still gets the answer instead of a
// reset; beyond it the connection is closed after the answer.
inline constexpr uint64_t kRefusalDrainBytes = 64ull << 20;

// Reads and discards the rest of the body, up to `limit` bytes; asks for
// the connection to close when more remains. False: the client is gone.
asio::awaitable<bool> DiscardBody(Request& req, Response& res, uint64_t limit);

// Sends `error`, first draining the unread body (see kRefusalDrainBytes).
asio::awaitable<void> RefuseMidBody(Request& req, Response& res, const Status& error);

// Bytes of request body gathered before they are handed to a job.
inline constexpr size_t kPumpBlockBytes = 256 * 1024;

// Pushes every byte of the request body into `channel`, in blocks of up to
// kPumpBlockBytes; Finish() at the end, Close() if the body breaks. Returns
// the body's status (not ok: the client is gone). Stops early, leaving the
// rest unread, when the channel's consumer closes it. Every byte handed to
// the channel is added to `counted` (a "bytes in" metric).
asio::awaitable<Status> PumpBody(Request& req, ByteChannel& channel, metrics::Counter& counted);

// The other direction: writes every block a job pushes into `channel` to
// the response body until the job finishes the channel. False when the
// client went away (the channel is then closed, which stops the job's
// next push). Each block written is added to `counted` when given, and
// handed back to the channel for the job to refill (ByteChannel::Recycle).
asio::awaitable<bool> SendChannel(ByteChannel& channel, Response& res,
                                  metrics::Counter* counted = nullptr);

}  // namespace agentd
