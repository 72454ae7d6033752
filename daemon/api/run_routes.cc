// POST /v1/run (docs/PROTOCOL.md, "Run code"): decodes the request, runs
// it through run/code_run.h and encodes the answer.
#include <memory>

#include "agentd/protocol/run.h"
#include "api/exec_api.h"
#include "api/json_body.h"
#include "api/query_reader.h"
#include "api/routes.h"
#include "run/code_run.h"

namespace agentd {
namespace {

asio::awaitable<void> RunCode(CodeRun& runner, Request& req, Response& res) {
  Result<json::Value> doc = co_await ReadJsonWithoutQuery(req);
  Result<RunRequest> run = doc.ok() ? DecodeRunRequest(*doc) : doc.status();
  if (!run.ok()) {
    co_await res.SendError(run.status());
    co_return;
  }
  std::function<bool()> client_gone = [&req] { return req.PeerClosed(); };
  Result<RunResponse> answer = co_await runner.Run(*run, client_gone);
  if (!answer.ok()) {
    co_await res.SendError(answer.status());
    co_return;
  }
  json::Value body = EncodeRunResponse(*answer);
  co_await res.SendJson(200, body);
}

}  // namespace

void RegisterRunRoutes(Router& router, ApiContext& ctx, ExecEngine& engine) {
  ctx.runtimes = [&engine] { return engine.Runtimes(); };
  ctx.runtimes_epoch = [&engine] {
    ExecEngine::RuntimeEpoch e = engine.RuntimeEpochNow();
    return std::optional<RuntimesEpoch>(RuntimesEpoch{e.probes, e.self_tests});
  };
  ctx.runtimes_unavailable = [&engine] {
    std::vector<RuntimeUnavailable> out;
    for (const RuntimeCheck& c : engine.RuntimeChecks()) {
      if (!c.ok()) out.push_back({std::string(RuntimeName(c.runtime)), c.code, c.reason});
    }
    return out;
  };
  ctx.runtime_self_tests = [&engine] {
    std::vector<RuntimeSelfTestState> out;
    for (const RuntimeSelfTests::Verdict& v : engine.RuntimeSelfTestVerdicts()) {
      bool ended = v.state != RuntimeSelfTests::State::kPending;
      out.push_back({std::string(RuntimeName(v.runtime)), v.program_path,
                     std::string(RuntimeSelfTests::StateName(v.state)),
                     ended ? std::optional<int64_t>(v.duration_ms) : std::nullopt});
    }
    return out;
  };
  ctx.limits = [&engine, &ctx] {
    const Limiter& l = engine.limiter();
    json::Array supported;
    for (const std::string& name : l.Supported()) supported.emplace_back(name);
    if (engine.network_unavailable().empty()) supported.emplace_back(std::string("network"));
    if (engine.scratch_unavailable().empty()) supported.emplace_back(std::string("disk"));
    json::Object defaults;
    if (ctx.config.engine.default_timeout_sec > 0)
      defaults.Set("timeout_sec", ctx.config.engine.default_timeout_sec);
    WriteExecLimits(defaults, ctx.config.engine.default_limits);
    json::Object o;
    o.Set("mechanism", std::string(l.mechanism_name()));
    o.Set("supported", std::move(supported));
    o.Set("defaults", std::move(defaults));
    o.Set("run_timeout_sec", ctx.config.run_timeout_sec);
    if (!engine.network_unavailable().empty()) o.Set("network_why", engine.network_unavailable());
    if (!engine.scratch_unavailable().empty()) o.Set("disk_why", engine.scratch_unavailable());
    json::Array egress_modes;
    if (engine.egress_unavailable().empty()) {
      for (std::string_view m : kEgressModes) egress_modes.emplace_back(std::string(m));
    } else {
      o.Set("egress_why", engine.egress_unavailable());
    }
    o.Set("egress_modes", std::move(egress_modes));
    if (*engine.egress_enforcer()) {
      o.Set("egress_enforcer", std::string(engine.egress_enforcer()));
    }
    return o;
  };
  auto runner =
      std::make_shared<CodeRun>(engine, ctx.blocking,
                                CodeRunOptions{.default_timeout_sec = ctx.config.run_timeout_sec,
                                               .workdir = ctx.config.engine.workdir,
                                               .scan_max_entries = ctx.config.scan_max_entries,
                                               .scan_max_ms = ctx.config.scan_max_ms,
                                               .changed_files_max = ctx.config.changed_files_max,
                                               .shared_driver_dir = ctx.config.run_driver_dir,
                                               .context_notes_dir = {}});
  router.Add("POST", "/v1/run",
             [runner](Request& req, Response& res) { return RunCode(*runner, req, res); });
}

}  // namespace agentd
