// GET /v1/health (docs/PROTOCOL.md, "Health"): no auth, cheap, never blocks.
//
// Probes and load balancers poll health, so its cost is the daemon's cost
// under them (docs/BENCHMARKS.md, the health row). Building the answer as
// a JSON tree was most of a request's time: the runtime lists (a PATH
// probe and self-test lookup, twice), and the limits and profiles objects
// (some 60 strings), allocated, copied into the answer and freed on every
// call. The answer is now written as text, member by member, in the order
// EncodeHealthResponse gives (the same bytes), from two kept fragments:
// - limits, ack_ttl_sec, retention and profiles, fixed once the engine
//   opened (ExecEngine::Open probes them before the server starts), are
//   serialized on the first call;
// - the three runtime lists are serialized again only when the engine's
//   RuntimeEpoch changes (a re-probe after a PATH directory changed, a
//   self-test verdict).
// Everything else (busy, counts, upgrade, reuse and drain state, contexts)
// is read on every call.
#include <charconv>
#include <memory>

#include "agentd/protocol/bootstrap.h"
#include "api/query_reader.h"
#include "api/routes.h"

namespace agentd {

std::string_view DaemonVersion() { return AGENTD_VERSION; }

namespace {

struct KeptFragments {
  std::string fixed;  // "limits":...,"ack_ttl_sec":...,"retention":...,"profiles":...
  std::optional<RuntimesEpoch> runtimes_epoch;
  std::string runtimes;  // "runtimes":[...],"runtimes_unavailable":[...],"runtime_self_tests":[...]
};

// `"key":`, after a comma unless first. Keys here are plain ASCII.
void AppendKey(std::string& out, std::string_view key, bool first = false) {
  if (!first) out += ',';
  out += '"';
  out += key;
  out += "\":";
}

void AppendInt(std::string& out, int64_t n) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, n);
  out.append(digits, end);
}

void AppendBool(std::string& out, bool b) { out += b ? "true" : "false"; }

// An object's members without its braces: a fragment to splice.
std::string Members(const json::Object& o) {
  std::string text = json::Serialize(json::Value(o));
  return text.size() >= 2 ? text.substr(1, text.size() - 2) : std::string();
}

std::string FixedFragment(ApiContext& ctx) {
  json::Object o;
  if (json::Object limits = ctx.limits(); !limits.empty()) o.Set("limits", std::move(limits));
  // The output-keeping policy, so harnesses (and the conformance suite) know
  // how long a released id lingers and when output turns into gaps.
  o.Set("ack_ttl_sec", ctx.config.engine.ack_ttl_sec);
  json::Object retention;
  retention.Set("stream_bytes", ctx.config.engine.retention_stream_bytes);
  retention.Set("total_bytes", ctx.config.engine.retention_total_bytes);
  o.Set("retention", std::move(retention));
  if (json::Object profiles = ctx.profiles(); !profiles.empty()) {
    o.Set("profiles", std::move(profiles));
  }
  return Members(o);
}

// The runtime lists as EncodeHealthResponse writes them.
std::string RuntimesFragment(ApiContext& ctx) {
  HealthResponse h;
  h.runtimes = ctx.runtimes();
  h.runtimes_unavailable = ctx.runtimes_unavailable();
  h.runtime_self_tests = ctx.runtime_self_tests();
  json::Value all = EncodeHealthResponse(h);
  json::Object lists;
  for (const char* key : {"runtimes", "runtimes_unavailable", "runtime_self_tests"}) {
    lists.Set(key, *all.Find(key));
  }
  return Members(lists);
}

const std::string& Runtimes(ApiContext& ctx, KeptFragments& kept) {
  // Read before building: a change while building is seen next call.
  std::optional<RuntimesEpoch> epoch = ctx.runtimes_epoch();
  if (!epoch || epoch != kept.runtimes_epoch || kept.runtimes.empty()) {
    kept.runtimes = RuntimesFragment(ctx);
    kept.runtimes_epoch = epoch;
  }
  return kept.runtimes;
}

asio::awaitable<void> Health(ApiContext& ctx, KeptFragments& kept, Request& req, Response& res) {
  if (Status s = QueryReader(req.query()).Finish(); !s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  // Not able to serve: probes see 503 with the first reason that holds
  // (docs/PROTOCOL.md, "Health").
  int code = 200;
  std::string_view status = "ok";
  std::string reason;
  std::string errno_name;
  auto unable = [&](std::string_view why_status, std::string why) {
    if (code != 200) return;
    code = 503;
    status = why_status;
    reason = std::move(why);
  };
  if (ctx.draining()) {
    unable("draining",
           "the daemon is stopping (SIGTERM): it ends the running execs and the requests in "
           "flight, refuses new ones, then exits");
  }
  if (ctx.reuse) {
    if (ctx.reuse->state() == GuestReset::State::kResetting) {
      unable("resetting", "a reset is running; the guest serves again when it ends");
    } else if (ctx.reuse->state() == GuestReset::State::kQuarantined) {
      unable("quarantined",
             "a reset could not prove the guest clean (see remaining); restart the daemon");
    }
  }
  if (code == 200) {
    if (Status writable = ctx.state_dir_writable(); !writable.ok()) {
      unable("state_dir_unwritable", writable.message());
      if (const json::Value* e = writable.details().Find("errno"); e && e->is_string()) {
        errno_name = e->as_string();
      }
    }
  }
  if (kept.fixed.empty()) kept.fixed = FixedFragment(ctx);

  std::string body;
  body.reserve(kept.fixed.size() + kept.runtimes.size() + 512);
  body += '{';
  AppendKey(body, "status", /*first=*/true);
  json::AppendQuoted(body, status);
  AppendKey(body, "version");
  json::AppendQuoted(body, DaemonVersion());
  AppendKey(body, "protocol");
  AppendInt(body, HealthResponse{}.protocol);
  AppendKey(body, "bootstrapped");
  AppendBool(body, ctx.bootstrap.bootstrapped());
  ExecCounts counts = ctx.exec_counts();
  AppendKey(body, "busy");
  AppendBool(body, counts.busy);
  AppendKey(body, "execs");
  AppendInt(body, counts.records);
  AppendKey(body, "uptime_ms");
  AppendInt(body, std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - ctx.started_at)
                      .count());
  body += ',';
  body += Runtimes(ctx, kept);
  if (code != 200) {
    AppendKey(body, "reason");
    json::AppendQuoted(body, reason);
  }
  if (!errno_name.empty()) {
    AppendKey(body, "errno");
    json::AppendQuoted(body, errno_name);
  }
  body += ',';
  body += kept.fixed;
  AppendKey(body, "contexts");
  json::AppendSerialized(body, json::Value(ctx.contexts()));
  AppendKey(body, "privileged_generation");
  AppendBool(body, ctx.privileged_generation());
  UpgradeCounts upgrades = ctx.upgrades();
  AppendKey(body, "upgrades");
  AppendInt(body, upgrades.upgrades);
  AppendKey(body, "upgrade_failures");
  AppendInt(body, upgrades.failures);
  if (json::Object upgrade = ctx.upgrade_state(); !upgrade.empty()) {
    AppendKey(body, "upgrade");
    json::AppendSerialized(body, json::Value(std::move(upgrade)));
  }
  if (ctx.reuse) {
    AppendKey(body, "generation");
    AppendInt(body, ctx.reuse->generation());
    AppendKey(body, "boot_id");
    json::AppendQuoted(body, ctx.reuse->boot_id());
    AppendKey(body, "state");
    json::AppendQuoted(body, ctx.reuse->state_name());
    AppendKey(body, "reset_processes");
    json::AppendSerialized(body, json::Value(ctx.reuse->reset_processes()));
    if (json::Array paths = ctx.reuse->reset_paths(); !paths.empty()) {
      AppendKey(body, "reset_paths");
      json::AppendSerialized(body, json::Value(std::move(paths)));
    }
    if (ctx.reuse->state() == GuestReset::State::kQuarantined) {
      json::Array items;
      for (const ResetRemaining& r : ctx.reuse->quarantine_items()) {
        items.emplace_back(
            json::Object().Set("kind", r.kind).Set("name", r.name).Set("reason", r.reason));
      }
      AppendKey(body, "remaining");
      json::AppendSerialized(body, json::Value(std::move(items)));
    }
  }
  body += "}\n";
  res.MarkRoutine();  // a 503 still logs at info (see Response::MarkRoutine)
  co_await res.Send(code, "application/json", body);
}

}  // namespace

void RegisterHealthRoutes(Router& router, ApiContext& ctx) {
  auto kept = std::make_shared<KeptFragments>();
  router.Add(
      "GET", "/v1/health",
      [&ctx, kept](Request& req, Response& res) { return Health(ctx, *kept, req, res); },
      /*requires_auth=*/false);
}

}  // namespace agentd
