// POST /v1/bootstrap (docs/PROTOCOL.md, "Auth and bootstrap").
#include "agentd/protocol/bootstrap.h"
#include "api/query_reader.h"
#include "api/routes.h"
#include "log/log.h"

namespace agentd {
namespace {

// The refusal names the body's size and, when the body is JSON, the share
// of it the env took, so a caller knows what to trim.
Status OverBudget(const std::string& body) {
  Status s = Status::Error(ErrorCode::kPayloadTooLarge,
                           "bootstrap body of " + std::to_string(body.size()) +
                               " bytes exceeds the budget of " +
                               std::to_string(kBootstrapBudgetBytes) + " bytes")
                 .With("size", body.size())
                 .With("limit", kBootstrapBudgetBytes);
  Result<json::Value> doc = json::Parse(body);
  if (doc.ok()) {
    if (const json::Value* env = doc->Find("env"))
      s.With("env_bytes", json::Serialize(*env).size());
    if (const json::Value* token = doc->Find("token"); token && token->is_string()) {
      s.With("token_bytes", token->as_string().size());
    }
  }
  return s;
}

asio::awaitable<void> Bootstrap(ApiContext& ctx, Request& req, Response& res) {
  if (Status s = QueryReader(req.query()).Finish(); !s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  // Read past the budget (up to the JSON limit) so the refusal can say how
  // the bytes were spent.
  Result<std::string> body = co_await req.ReadBodyAll(ctx.config.limits.max_json_body_bytes);
  if (!body.ok()) {
    Status s = body.status();
    if (s.code() == ErrorCode::kPayloadTooLarge) s.With("limit", kBootstrapBudgetBytes);
    co_await res.SendError(s);
    co_return;
  }
  if (body->size() > kBootstrapBudgetBytes) {
    co_await res.SendError(OverBudget(*body));
    co_return;
  }
  if (body->empty()) {
    co_await res.SendError(Status::InvalidRequest("request body must be a JSON object"));
    co_return;
  }
  Result<json::Value> doc = json::Parse(*body);
  if (!doc.ok()) {
    co_await res.SendError(doc.status());
    co_return;
  }
  Result<BootstrapRequest> request = DecodeBootstrapRequest(*doc);
  if (!request.ok()) {
    co_await res.SendError(request.status());
    co_return;
  }
  switch (ctx.bootstrap.Bootstrap(*request)) {
    case BootstrapState::Outcome::kAccepted:
      Log(LogLevel::kInfo, "bootstrapped",
          json::Object().Set("launch_env_vars", request->env.size()));
      co_await res.SendJson(200, EncodeBootstrapResponse({.replayed = false}));
      break;
    case BootstrapState::Outcome::kReplayed:
      co_await res.SendJson(200, EncodeBootstrapResponse({.replayed = true}));
      break;
    case BootstrapState::Outcome::kConflict:
      co_await res.SendError(Status::Error(ErrorCode::kAlreadyBootstrapped,
                                           "the daemon was already bootstrapped with another "
                                           "token"));
      break;
  }
}

}  // namespace

void RegisterBootstrapRoutes(Router& router, ApiContext& ctx) {
  router.Add(
      "POST", "/v1/bootstrap",
      [&ctx](Request& req, Response& res) { return Bootstrap(ctx, req, res); },
      /*requires_auth=*/false);
}

}  // namespace agentd
