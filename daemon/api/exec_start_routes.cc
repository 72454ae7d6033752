// PUT /v1/execs/{id} (docs/PROTOCOL.md, "Start", and "Start and wait").
#include "agentd/protocol/exec.h"
#include "api/exec_api.h"
#include "api/exec_poll_answer.h"

namespace agentd {
namespace {

asio::awaitable<void> StartExec(ExecEngine& engine, Request& req, Response& res) {
  Result<ExecId> id = ExecId::Parse(req.Param("id"));
  if (!id.ok()) {
    co_await res.SendError(id.status());
    co_return;
  }
  // Poll's parameters make this a start and wait (checked before anything
  // starts; the cursors are checked against the streams after).
  QueryReader q(req.query());
  PollQuery poll = ReadPollQuery(q, /*allow_match=*/false);
  if (Status s = q.Finish(); !s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  Result<json::Value> doc = co_await req.ReadJson();
  Result<ExecStartRequest> request = doc.ok() ? DecodeExecStartRequest(*doc) : doc.status();
  if (!request.ok()) {
    co_await res.SendError(request.status());
    co_return;
  }
  Result<ExecEngine::Started> started = co_await engine.StartLaunched(*id, *request);
  if (!started.ok()) {
    co_await res.SendError(started.status());
    co_return;
  }
  const ExecView& exec = started->exec;
  int status = started->created ? 201 : 200;
  if (poll.given) {
    co_await AnswerPoll(exec, poll, status, res);
    co_return;
  }
  json::Value body = EncodeExecInfo(exec.Info());
  co_await res.SendJson(status, body);
}

}  // namespace

void RegisterExecStartRoutes(Router& router, ExecEngine& engine) {
  router.Add("PUT", "/v1/execs/{id}",
             [&engine](Request& req, Response& res) { return StartExec(engine, req, res); });
}

}  // namespace agentd
