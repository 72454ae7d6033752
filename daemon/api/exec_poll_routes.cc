// GET /v1/execs/{id} (poll, long poll), GET /v1/execs (list) and
// GET /v1/execs/{id}/egress (docs/PROTOCOL.md, "Poll", "List" and
// "Egress"). All read-only.
#include "agentd/protocol/exec.h"
#include "api/exec_api.h"
#include "api/exec_match_wait.h"
#include "api/exec_poll_answer.h"

namespace agentd {
namespace {

asio::awaitable<void> Poll(ApiContext& ctx, ExecEngine& engine, Request& req, Response& res) {
  QueryReader q(req.query());
  PollQuery poll = ReadPollQuery(q, /*allow_match=*/true);
  if (Status s = q.Finish(); !s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  Result<ExecView> found = engine.Find(req.Param("id"));
  if (!found.ok()) {
    co_await res.SendError(found.status());
    co_return;
  }
  if (poll.match) {
    co_await AnswerMatchPoll(ctx, req, *found, poll, res);
    co_return;
  }
  co_await AnswerPoll(*found, poll, 200, res);
}

asio::awaitable<void> List(ExecEngine& engine, Request& req, Response& res) {
  if (Status s = QueryReader(req.query()).Finish(); !s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  co_await res.SendJson(200, EncodeExecList(engine.List()));
}

asio::awaitable<void> Egress(ExecEngine& engine, Request& req, Response& res) {
  if (Status s = QueryReader(req.query()).Finish(); !s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  Result<EgressReport> report = engine.Egress(req.Param("id"));
  if (!report.ok()) {
    co_await res.SendError(report.status());
    co_return;
  }
  co_await res.SendJson(200, EncodeEgressReport(*report));
}

}  // namespace

void RegisterExecPollRoutes(Router& router, ApiContext& ctx, ExecEngine& engine) {
  router.Add("GET", "/v1/execs",
             [&engine](Request& req, Response& res) { return List(engine, req, res); });
  router.Add("GET", "/v1/execs/{id}",
             [&ctx, &engine](Request& req, Response& res) { return Poll(ctx, engine, req, res); });
  router.Add("GET", "/v1/execs/{id}/egress",
             [&engine](Request& req, Response& res) { return Egress(engine, req, res); });
}

}  // namespace agentd
