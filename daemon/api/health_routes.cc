// GET /v1/health (docs/PROTOCOL.md, "Health"): no auth, cheap, never blocks.
#include "agentd/protocol/bootstrap.h"
#include "api/query_reader.h"
#include "api/routes.h"

namespace agentd {

std::string_view DaemonVersion() { return AGENTD_VERSION; }

namespace {

asio::awaitable<void> Health(ApiContext& ctx, Request& req, Response& res) {
  if (Status s = QueryReader(req.query()).Finish(); !s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
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
  h.runtimes_unavailable = ctx.runtimes_unavailable();
  h.runtime_self_tests = ctx.runtime_self_tests();
  if (json::Object limits = ctx.limits(); !limits.empty()) h.extra.Set("limits", std::move(limits));
  // The output-keeping policy, so harnesses (and the conformance suite) know
  // how long a released id lingers and when output turns into gaps.
  h.extra.Set("ack_ttl_sec", ctx.config.engine.ack_ttl_sec);
  json::Object retention;
  retention.Set("stream_bytes", ctx.config.engine.retention_stream_bytes);
  retention.Set("total_bytes", ctx.config.engine.retention_total_bytes);
  h.extra.Set("retention", std::move(retention));
  if (json::Object profiles = ctx.profiles(); !profiles.empty()) {
    h.extra.Set("profiles", std::move(profiles));
  }
  h.extra.Set("contexts", ctx.contexts());
  h.extra.Set("privileged_generation", ctx.privileged_generation());
  UpgradeCounts upgrades = ctx.upgrades();
  h.extra.Set("upgrades", upgrades.upgrades);
  h.extra.Set("upgrade_failures", upgrades.failures);
  if (json::Object upgrade = ctx.upgrade_state(); !upgrade.empty()) {
    h.extra.Set("upgrade", std::move(upgrade));
  }
  // Not able to serve: probes see 503 with the first reason that holds
  // (docs/PROTOCOL.md, "Health").
  int code = 200;
  auto unable = [&](std::string status, std::string reason) {
    if (code != 200) return;
    code = 503;
    h.status = std::move(status);
    h.reason = std::move(reason);
  };
  if (ctx.draining()) {
    unable("draining",
           "the daemon is stopping (SIGTERM): it ends the running execs and the requests in "
           "flight, refuses new ones, then exits");
  }
  if (ctx.reuse) {
    h.extra.Set("generation", ctx.reuse->generation());
    h.extra.Set("boot_id", ctx.reuse->boot_id());
    h.extra.Set("state", std::string(ctx.reuse->state_name()));
    h.extra.Set("reset_processes", ctx.reuse->reset_processes());
    if (json::Array paths = ctx.reuse->reset_paths(); !paths.empty()) {
      h.extra.Set("reset_paths", std::move(paths));
    }
    if (ctx.reuse->state() == GuestReset::State::kResetting) {
      unable("resetting", "a reset is running; the guest serves again when it ends");
    } else if (ctx.reuse->state() == GuestReset::State::kQuarantined) {
      unable("quarantined",
             "a reset could not prove the guest clean (see remaining); restart the daemon");
    }
    if (ctx.reuse->state() == GuestReset::State::kQuarantined) {
      json::Array items;
      for (const ResetRemaining& r : ctx.reuse->quarantine_items()) {
        items.emplace_back(
            json::Object().Set("kind", r.kind).Set("name", r.name).Set("reason", r.reason));
      }
      h.extra.Set("remaining", std::move(items));
    }
  }
  if (code == 200) {
    if (Status writable = ctx.state_dir_writable(); !writable.ok()) {
      unable("state_dir_unwritable", writable.message());
      if (const json::Value* e = writable.details().Find("errno"); e && e->is_string()) {
        h.errno_name = e->as_string();
      }
    }
  }
  co_await res.SendJson(code, EncodeHealthResponse(h));
}

}  // namespace

void RegisterHealthRoutes(Router& router, ApiContext& ctx) {
  router.Add(
      "GET", "/v1/health", [&ctx](Request& req, Response& res) { return Health(ctx, req, res); },
      /*requires_auth=*/false);
}

}  // namespace agentd
