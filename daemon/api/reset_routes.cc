// POST /v1/reset and the quarantine gate (docs/PROTOCOL.md, "Reuse").
//
// The route is public to the router because a retry must work with the
// token the reset retired: the handler authorizes itself. The current
// token may reset (or read a recorded report); a retired token may only
// read the report of the reset that retired it, by that reset_id, compared
// in constant time. Everything else is the authorizer's refusal.
#include "agentd/protocol/reset.h"
#include "api/query_reader.h"
#include "api/routes.h"
#include "server/connection.h"

namespace agentd {
namespace {

Result<ResetRequest> DecodeBody(const Result<std::string>& body) {
  if (!body.ok()) return body.status();
  if (body->empty()) return Status::InvalidRequest("request body must be a JSON object");
  Result<json::Value> doc = json::Parse(*body);
  if (!doc.ok()) return doc.status();
  return DecodeResetRequest(*doc);
}

asio::awaitable<void> Reset(ApiContext& ctx, GuestReset& reuse, Request& req, Response& res) {
  Status authorized = ctx.bootstrap.Authorize(req.Header("authorization"));
  if (Status s = QueryReader(req.query()).Finish(); !s.ok()) {
    co_await res.SendError(authorized.ok() ? s : authorized);
    co_return;
  }
  Result<std::string> body = co_await req.ReadBodyAll(ctx.config.limits.max_json_body_bytes);
  Result<ResetRequest> request = DecodeBody(body);
  if (!request.ok()) {
    // A caller without the current token learns nothing about its body.
    co_await res.SendError(authorized.ok() ? request.status() : authorized);
    co_return;
  }
  if (std::shared_ptr<ResetLedger::Entry> entry = reuse.ledger().Find(request->reset_id)) {
    std::optional<std::string_view> bearer = BearerToken(req.Header("authorization"));
    if (ResetLedger::MayRead(*entry, bearer, authorized.ok())) {
      std::optional<ResetReport> report = co_await reuse.ReportOf(entry);
      if (report) {
        report->replayed = true;
        co_await res.SendJson(200, EncodeResetReport(*report));
        co_return;
      }
      // That attempt was refused before it changed anything: this one is
      // a new attempt, for the current token only.
    }
  }
  if (!authorized.ok()) {
    co_await res.SendError(authorized);
    co_return;
  }
  if (reuse.state() == GuestReset::State::kQuarantined) {
    co_await res.SendError(
        Status::Error(ErrorCode::kQuarantined, "the guest is quarantined; restart the daemon"));
    co_return;
  }
  if (reuse.state() == GuestReset::State::kResetting) {
    co_await res.SendError(
        Status::Error(ErrorCode::kResetting, "another reset (another reset_id) is running"));
    co_return;
  }
  // With --token-file, Run() writes next.token there first.
  if (!request->next && !ctx.config.token_file.empty()) {
    co_await res.SendError(
        Status::InvalidRequest("this daemon reads its token from --token-file; a reset must "
                               "carry next.token (a restart would revive the old token)")
            .With("field", "next"));
    co_return;
  }
  const Connection* self = &req.connection();
  std::function<void()> close_others = [&ctx, self] { ctx.close_all_but(self); };
  ResetRequest owned = std::move(*request);
  Result<ResetReport> report = co_await reuse.Run(owned, close_others);
  if (!report.ok()) {
    co_await res.SendError(report.status());
  } else {
    co_await res.SendJson(200, EncodeResetReport(*report));
  }
  // Only now: the freeing of the swapped-out layers does not share the
  // CPUs with the reset's last steps and its answer (reuse/guest_reset.h).
  reuse.ReleaseDetached();
}

// While resetting or quarantined, only health, metrics and reset answer.
Status Gate(const GuestReset& reuse, const Request& req) {
  if (reuse.state() == GuestReset::State::kReady) return Status::Ok();
  const std::string& path = req.path();
  if (path == "/v1/health" || path == "/v1/metrics" || path == "/v1/reset") return Status::Ok();
  if (reuse.state() == GuestReset::State::kQuarantined) {
    return Status::Error(ErrorCode::kQuarantined,
                         "the guest is quarantined: a reset could not prove it clean; restart "
                         "the daemon (GET /v1/health names what remained)");
  }
  return Status::Error(ErrorCode::kResetting, "the guest is being reset; retry after the reset");
}

}  // namespace

void RegisterResetRoutes(Router& router, ApiContext& ctx, GuestReset& reuse) {
  ctx.reuse = &reuse;
  router.AddGate([&reuse](const Request& req) { return Gate(reuse, req); });
  router.Add(
      "POST", "/v1/reset",
      [&ctx, &reuse](Request& req, Response& res) { return Reset(ctx, reuse, req, res); },
      /*requires_auth=*/false);
}

}  // namespace agentd
