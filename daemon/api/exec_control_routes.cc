// POST /v1/execs/{id}/ack, /kill, /stdin and /resize (docs/PROTOCOL.md,
// "Ack", "Kill", "Stdin", "Resize").
#include "agentd/protocol/exec.h"
#include "api/exec_api.h"
#include "api/json_body.h"

namespace agentd {
namespace {

asio::awaitable<void> Ack(ExecEngine& engine, Request& req, Response& res) {
  if (Status s = QueryReader(req.query()).Finish(); !s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  Result<ExecInfo> info = engine.Ack(req.Param("id"));
  if (!info.ok()) {
    co_await res.SendError(info.status());
    co_return;
  }
  co_await res.SendJson(200, EncodeExecInfo(*info));
}

// The kill body is optional: no body (or an empty one) means the defaults.
asio::awaitable<Result<KillRequest>> ReadKillRequest(Request& req) {
  AGENTD_CO_RETURN_IF_ERROR(QueryReader(req.query()).Finish());
  Result<std::string> body = co_await req.ReadBodyAll(req.limits().max_json_body_bytes);
  if (!body.ok()) co_return body.status();
  if (body->empty()) co_return KillRequest{};
  Result<json::Value> doc = json::Parse(*body);
  if (!doc.ok()) co_return doc.status();
  co_return DecodeKillRequest(*doc);
}

asio::awaitable<void> Kill(ExecEngine& engine, Request& req, Response& res) {
  Result<KillRequest> kill = co_await ReadKillRequest(req);
  if (!kill.ok()) {
    co_await res.SendError(kill.status());
    co_return;
  }
  Result<ExecInfo> info = engine.Kill(req.Param("id"), *kill);
  if (!info.ok()) {
    co_await res.SendError(info.status());
    co_return;
  }
  co_await res.SendJson(200, EncodeExecInfo(*info));
}

asio::awaitable<Result<uint64_t>> WriteStdin(ExecEngine& engine, Request& req) {
  QueryReader q(req.query());
  std::optional<uint64_t> offset = q.Number("offset", 0, INT64_MAX);
  // (A malformed offset was recorded first; the first problem wins.)
  if (!offset) {
    q.Fail(
        Status::InvalidRequest("query parameter \"offset\" is required").With("field", "offset"));
  }
  bool eof = q.Bool("eof", false);
  AGENTD_CO_RETURN_IF_ERROR(q.Finish());
  Result<std::unique_ptr<StdinWrite>> write =
      co_await engine.BeginStdin(req.Param("id"), *offset, req.limits().io_timeout);
  if (!write.ok()) co_return write.status();
  for (;;) {
    Result<std::string_view> chunk = co_await req.ReadBody();
    if (!chunk.ok()) co_return chunk.status();
    if (chunk->empty()) break;
    AGENTD_CO_RETURN_IF_ERROR(co_await (*write)->Write(*chunk));
  }
  co_return (*write)->Finish(eof);
}

asio::awaitable<void> Stdin(ExecEngine& engine, Request& req, Response& res) {
  Result<uint64_t> next = co_await WriteStdin(engine, req);
  if (!next.ok()) {
    co_await res.SendError(next.status());
    co_return;
  }
  StdinResponse answer{.next = *next};  // (GCC 12: no braced list inside co_await)
  co_await res.SendJson(200, EncodeStdinResponse(answer));
}

asio::awaitable<void> Resize(ExecEngine& engine, Request& req, Response& res) {
  Result<json::Value> doc = co_await ReadJsonWithoutQuery(req);
  Result<ResizeRequest> resize = doc.ok() ? DecodeResizeRequest(*doc) : doc.status();
  if (!resize.ok()) {
    co_await res.SendError(resize.status());
    co_return;
  }
  Result<ExecInfo> info = engine.Resize(req.Param("id"), *resize);
  if (!info.ok()) {
    co_await res.SendError(info.status());
    co_return;
  }
  co_await res.SendJson(200, EncodeExecInfo(*info));
}

}  // namespace

void RegisterExecControlRoutes(Router& router, ExecEngine& engine) {
  router.Add("POST", "/v1/execs/{id}/ack",
             [&engine](Request& req, Response& res) { return Ack(engine, req, res); });
  router.Add("POST", "/v1/execs/{id}/kill",
             [&engine](Request& req, Response& res) { return Kill(engine, req, res); });
  router.Add("POST", "/v1/execs/{id}/stdin",
             [&engine](Request& req, Response& res) { return Stdin(engine, req, res); });
  router.Add("POST", "/v1/execs/{id}/resize",
             [&engine](Request& req, Response& res) { return Resize(engine, req, res); });
}

}  // namespace agentd
