// GET /v1/metrics (docs/PROTOCOL.md, "Metrics"): the Prometheus text
// exposition of the daemon's registry, and the dispatcher that counts
// every HTTP request by method, route pattern and status.
#include "agentd/protocol/bootstrap.h"
#include "api/query_reader.h"
#include "api/routes.h"
#include "metrics/daemon_metrics.h"

namespace agentd {
namespace {

constexpr std::string_view kExpositionType = "text/plain; version=0.0.4; charset=utf-8";

// Methods are client-chosen tokens: only the known ones become label values.
std::string MethodLabel(std::string_view method) {
  for (std::string_view known : {"GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"}) {
    if (method == known) return std::string(known);
  }
  return "other";
}

asio::awaitable<void> Metrics(Request& req, Response& res) {
  if (Status s = QueryReader(req.query()).Finish(); !s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  std::string text = metrics::Daemon().registry.Render();
  co_await res.Send(200, kExpositionType, text);
}

}  // namespace

asio::awaitable<void> DispatchCounted(const Router& router, Request& req, Response& res) {
  auto started = std::chrono::steady_clock::now();
  co_await router.Dispatch(req, res);
  // Only route patterns ("/v1/execs/{id}"), never paths, become labels.
  std::string route = req.route_pattern().empty() ? "unmatched" : req.route_pattern();
  int status = res.started() ? res.status() : 500;
  metrics::DaemonMetrics& m = metrics::Daemon();
  m.http_requests.With({MethodLabel(req.method()), route, std::to_string(status)}).Inc();
  m.http_duration.With({route}).Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

void RegisterMetricsRoutes(Router& router) {
  router.Add("GET", "/v1/metrics", [](Request& req, Response& res) { return Metrics(req, res); });
}

}  // namespace agentd
