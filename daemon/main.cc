// agentd: wires configuration, state and routes together, then serves.
#include <signal.h>

#include <asio.hpp>
#include <cstdio>

#include "api/api_context.h"
#include "api/fs_service.h"
#include "api/routes.h"
#include "auth/bootstrap_state.h"
#include "config/daemon_config.h"
#include "exec/exec_engine.h"
#include "fs/temp_journal.h"
#include "log/log.h"
#include "metrics/daemon_metrics.h"
#include "proc/init_workload.h"
#include "proc/oom_score.h"
#include "reuse/guest_reset.h"
#include "server/http_server.h"
#include "server/router.h"

namespace agentd {
namespace {

// Gauges read at render time (on the io thread) from the serving objects.
void RegisterServeMetrics(ApiContext& ctx, ExecEngine& exec, HttpServer& server) {
  metrics::Registry& r = metrics::Daemon().registry;
  r.AddCallbackGauge("agentd_execs_running", "Execs whose leader process runs.",
                     [&exec] { return static_cast<double>(exec.running()); });
  r.AddCallbackGauge("agentd_exec_records", "Exec records held (every state).",
                     [&exec] { return static_cast<double>(exec.Totals().records); });
  r.AddCallbackGauge("agentd_http_connections_open", "Open client connections.",
                     [&server] { return static_cast<double>(server.connection_count()); });
  r.AddCallbackGauge("agentd_orphans_reaped", "Orphaned processes the daemon reaped.",
                     [&exec] { return static_cast<double>(exec.reaper().orphans_reaped()); });
  r.AddCallbackGauge("agentd_uptime_seconds", "Seconds since the daemon started.", [&ctx] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx.started_at).count();
  });
  r.AddGauge("agentd_limit_mechanism", "The limit mechanism in force (value 1).", {"mechanism"})
      .With({std::string(exec.limiter().mechanism_name())})
      .Set(1);
}

int Serve(DaemonConfig& config) {
  SetLogLevel(config.log_level);
  ::signal(SIGPIPE, SIG_IGN);  // a vanished peer is an error code, not a death
  if (config.listen.empty()) config.listen.push_back(*ListenAddress::Parse(kDefaultListen));

  BootstrapState bootstrap;
  if (!config.token_file.empty()) {
    Result<std::string> token = ReadTokenFile(config.token_file);
    if (!token.ok()) {
      std::fprintf(stderr, "agentd: %s\n", token.status().message().c_str());
      return 1;
    }
    bootstrap.SetToken(std::move(*token));
  }

  // The OOM killer picks a child before the daemon (docs/PROTOCOL.md, "Limits").
  if (Status s = SetOwnOomScoreAdj(config.oom_score_adj); !s.ok()) {
    Log(LogLevel::kWarn, "cannot set the daemon's oom_score_adj",
        json::Object().Set("value", config.oom_score_adj).Set("error", s.message()));
  }

  Result<std::unique_ptr<FsService>> fs = FsService::Create(config);
  if (!fs.ok()) {
    std::fprintf(stderr, "agentd: %s\n", fs.status().message().c_str());
    return 1;
  }

  asio::io_context io(1);
  asio::thread_pool blocking(2);
  ApiContext ctx{config, bootstrap, blocking};
  ExecEngine exec(io, blocking, EngineOptionsOf(config), bootstrap);
  if (Status s = exec.Open(); !s.ok()) {
    std::fprintf(stderr, "agentd: %s\n", s.message().c_str());
    return 1;
  }

  // Temporaries a killed predecessor left beside files and trees go now.
  TempJournal::Enable(exec.state_dir() + "/temporaries");

  Router router;
  router.SetAuthorizer([&bootstrap](const Request& req) {
    return bootstrap.Authorize(req.Header("authorization"));
  });
  RegisterBootstrapRoutes(router, ctx);
  RegisterHealthRoutes(router, ctx);
  RegisterExecRoutes(router, ctx, exec);
  RegisterRunRoutes(router, ctx, exec);
  RegisterMetricsRoutes(router);
  RegisterFsFileRoutes(router, ctx, **fs);
  RegisterFsMetaRoutes(router, ctx, **fs);
  RegisterFsEditRoutes(router, ctx, **fs);
  RegisterFsTarRoutes(router, ctx, **fs);
  RegisterFsSearchRoutes(router, ctx, **fs);
  RegisterFsWatchRoutes(router, ctx, **fs);
  RegisterPortRoutes(router, ctx);
  // PID 1 mode's workload is the operator's, not a tenant's: a reset
  // spares its subtree (created below, before serving).
  std::unique_ptr<InitWorkload> init;
  GuestResetOptions reset_options;
  reset_options.token_file = config.token_file;
  reset_options.reset_paths = config.reset_paths;
  if (reset_options.reset_paths.empty() && !config.workdir.empty()) {
    reset_options.reset_paths.push_back(config.workdir);
  }
  reset_options.reset_baselines = config.reset_baselines;
  reset_options.requires_restricted = config.reset_requires_restricted;
  reset_options.spared = [&init] {
    std::vector<pid_t> pids;
    if (init && init->pid() > 0) pids.push_back(init->pid());
    return pids;
  };
  GuestReset reuse(blocking, exec, bootstrap, std::move(reset_options));
  if (Status s = reuse.Open(exec.state_dir()); !s.ok()) {
    std::fprintf(stderr, "agentd: %s\n", s.message().c_str());
    return 1;
  }
  RegisterResetRoutes(router, ctx, reuse);

  HttpServer server(io, config.limits, [&router](Request& req, Response& res) {
    return DispatchCounted(router, req, res);
  });
  RegisterServeMetrics(ctx, exec, server);
  ctx.close_all_but = [&server](const Connection* keep) { server.CloseAllBut(keep); };
  for (const ListenAddress& address : config.listen) {
    Status s = server.Listen(address);
    if (!s.ok()) {
      std::fprintf(stderr, "agentd: %s\n", s.message().c_str());
      return 1;
    }
  }

  int exit_code = 0;
  bool stopping = false;
  auto stop = [&](json::Object why, int code) {
    if (stopping) return;
    stopping = true;
    exit_code = code;
    Log(LogLevel::kInfo, "shutting down", std::move(why));
    exec.Shutdown();
    // Connections drain while the killed execs end, so their exits are
    // recorded before the daemon stops.
    server.Shutdown(config.shutdown_grace,
                    [&] { exec.WhenFinished(config.shutdown_grace, [&io] { io.stop(); }); });
  };
  // PID 1 mode owns the signals (it forwards them); otherwise they stop us.
  asio::signal_set signals(io);
  if (config.init) {
    init = std::make_unique<InitWorkload>(io, exec.reaper(), config.command, config.exit_with_cmd,
                                          config.init_user, exec.child_nofile(), [&](int code) {
                                            stop(json::Object().Set("init_exit_code", code), code);
                                          });
    if (Status s = init->Start(); !s.ok()) {
      std::fprintf(stderr, "agentd: %s\n", s.message().c_str());
      return 1;
    }
  } else {
    signals.add(SIGTERM);
    signals.add(SIGINT);
    signals.async_wait([&](const asio::error_code& ec, int signo) {
      if (!ec) stop(json::Object().Set("signal", signo), 0);
    });
  }

  Log(LogLevel::kInfo, "ready",
      json::Object()
          .Set("version", std::string(DaemonVersion()))
          .Set("bootstrapped", bootstrap.bootstrapped()));
  io.run();
  (*fs)->Shutdown();  // jobs blocked on a connection's channel return now
  blocking.join();
  exec.CloseLimits();
  Log(LogLevel::kInfo, "stopped", json::Object().Set("exit_code", exit_code));
  return exit_code;
}

}  // namespace
}  // namespace agentd

int main(int argc, char** argv) {
  using agentd::ParsedFlags;
  agentd::Result<ParsedFlags> flags = agentd::ParseFlags(argc, argv);
  if (!flags.ok()) {
    std::fprintf(stderr, "agentd: %s\nTry 'agentd --help'.\n", flags.status().message().c_str());
    return 2;
  }
  switch (flags->action) {
    case ParsedFlags::Action::kHelp:
      std::fputs(agentd::HelpText().c_str(), stdout);
      return 0;
    case ParsedFlags::Action::kVersion:
      std::printf("agentd %s (protocol 1)\n", std::string(agentd::DaemonVersion()).c_str());
      return 0;
    case ParsedFlags::Action::kRun:
      break;
  }
  return agentd::Serve(flags->config);
}
