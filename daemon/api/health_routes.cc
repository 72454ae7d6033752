// GET /v1/health (docs/PROTOCOL.md, "Health"): no auth, cheap, never blocks.
#include "agentd/protocol/bootstrap.h"
#include "api/routes.h"

namespace agentd {

std::string_view DaemonVersion() { return AGENTD_VERSION; }

namespace {

asio::awaitable<void> Health(ApiContext& ctx, Request&, Response& res) {
  HealthResponse h;
  h.version = std::string(DaemonVersion());
  h.bootstrapped = ctx.bootstrap.bootstrapped();
  ExecCounts counts = ctx.exec_counts();
  h.busy = counts.busy;
  h.execs = counts.records;
  h.uptime_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - ctx.started_at)
                    .count();
  h.runtimes = ctx.runtimes();
  if (json::Object limits = ctx.limits(); !limits.empty()) h.extra.Set("limits", std::move(limits));
  co_await res.SendJson(200, EncodeHealthResponse(h));
}

}  // namespace

void RegisterHealthRoutes(Router& router, ApiContext& ctx) {
  router.Add(
      "GET", "/v1/health", [&ctx](Request& req, Response& res) { return Health(ctx, req, res); },
      /*requires_auth=*/false);
}

}  // namespace agentd
