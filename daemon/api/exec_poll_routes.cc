// GET /v1/execs/{id} (poll, long poll) and GET /v1/execs (list)
// (docs/PROTOCOL.md, "Poll" and "List"). Both are read-only.
#include "agentd/protocol/exec.h"
#include "api/exec_api.h"

namespace agentd {
namespace {

struct PollQuery {
  std::optional<uint64_t> cursors[2];
  uint64_t max_bytes = kDefaultPollMaxBytes;
  uint64_t wait_ms = 0;
};

Result<PollQuery> ParsePollQuery(const Request& req) {
  PollQuery q;
  const char* names[2] = {"stdout_from", "stderr_from"};
  for (int i = 0; i < 2; ++i) {
    Result<std::optional<uint64_t>> c = QueryNumber(req, names[i], 0, INT64_MAX);
    if (!c.ok()) return c.status();
    q.cursors[i] = *c;
  }
  Result<std::optional<uint64_t>> max = QueryNumber(req, "max_bytes", 1, kMaxPollMaxBytes);
  if (!max.ok()) return max.status();
  q.max_bytes = max->value_or(kDefaultPollMaxBytes);
  Result<std::optional<uint64_t>> wait = QueryNumber(req, "wait_ms", 0, kMaxWaitMs);
  if (!wait.ok()) return wait.status();
  q.wait_ms = wait->value_or(0);
  return q;
}

// Something a long poll answers for: new bytes (or a gap) past a cursor it
// was given, or the exec's end.
bool HasNews(ExecRecord& rec, const PollQuery& q) {
  if (rec.finished() || rec.released) return true;
  for (Stream s : {Stream::kStdout, Stream::kStderr}) {
    const std::optional<uint64_t>& c = q.cursors[static_cast<int>(s)];
    if (c && *c < rec.log(s).next()) return true;
  }
  return false;
}

Result<ExecPollResponse> Snapshot(ExecRecord& rec, const PollQuery& q) {
  ExecPollResponse r;
  r.exec = rec.Info();
  for (Stream s : {Stream::kStdout, Stream::kStderr}) {
    const std::optional<uint64_t>& cursor = q.cursors[static_cast<int>(s)];
    if (!cursor) continue;
    OutputLog& log = rec.log(s);
    OutputSlice slice;
    slice.from = std::max(*cursor, log.retained_from());
    if (*cursor < slice.from) slice.gap_from = *cursor;
    AGENTD_RETURN_IF_ERROR(log.Read(slice.from, q.max_bytes, &slice.data));
    slice.next = slice.from + slice.data.size();
    (s == Stream::kStdout ? r.stdout_slice : r.stderr_slice) = std::move(slice);
  }
  return r;
}

asio::awaitable<void> Poll(ExecEngine& engine, Request& req, Response& res) {
  Result<PollQuery> q = ParsePollQuery(req);
  if (!q.ok()) {
    co_await res.SendError(q.status());
    co_return;
  }
  Result<std::shared_ptr<ExecRecord>> found = engine.Find(req.Param("id"));
  if (!found.ok()) {
    co_await res.SendError(found.status());
    co_return;
  }
  std::shared_ptr<ExecRecord> rec = *found;
  for (Stream s : {Stream::kStdout, Stream::kStderr}) {
    if (const auto& c = q->cursors[static_cast<int>(s)]) {
      Status ok =
          CheckCursor(s == Stream::kStdout ? "stdout_from" : "stderr_from", *c, rec->log(s));
      if (!ok.ok()) {
        co_await res.SendError(ok);
        co_return;
      }
    }
  }
  auto deadline = ChangeSignal::Clock::now() + std::chrono::milliseconds(q->wait_ms);
  while (!HasNews(*rec, *q) && ChangeSignal::Clock::now() < deadline) {
    co_await rec->changed.Wait(deadline);
  }
  Result<ExecPollResponse> answer = Snapshot(*rec, *q);
  if (!answer.ok()) {
    co_await res.SendError(answer.status());
    co_return;
  }
  co_await res.SendJson(200, EncodeExecPollResponse(*answer));
}

asio::awaitable<void> List(ExecEngine& engine, Request&, Response& res) {
  co_await res.SendJson(200, EncodeExecList(engine.List()));
}

}  // namespace

void RegisterExecPollRoutes(Router& router, ExecEngine& engine) {
  router.Add("GET", "/v1/execs",
             [&engine](Request& req, Response& res) { return List(engine, req, res); });
  router.Add("GET", "/v1/execs/{id}",
             [&engine](Request& req, Response& res) { return Poll(engine, req, res); });
}

}  // namespace agentd
