// agentd: wires configuration, state and routes together, then serves.
#include <signal.h>
#include <unistd.h>

#include <asio.hpp>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "api/api_context.h"
#include "api/fs_service.h"
#include "api/routes.h"
#include "auth/bootstrap_state.h"
#include "auth/rotated_token.h"
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
#include "sys/read_file.h"
#include "sys/thread_sanitizer.h"
#include "sys/write_probe.h"
#include "upgrade/handover_state.h"
#include "upgrade/upgrade_command.h"
#include "upgrade/upgrader.h"

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

// The token and launch environment, for the memfd an upgrade hands over.
std::string EncodeSecrets(const BootstrapState& bootstrap) {
  BootstrapRequest request{bootstrap.token(), bootstrap.launch_env()};
  return json::Serialize(json::Object()
                             .Set("bootstrapped", bootstrap.bootstrapped())
                             .Set("request", EncodeBootstrapRequest(request)));
}

Status RestoreSecrets(int fd, BootstrapState& bootstrap) {
  Result<std::string> text = ReadSecrets(fd);
  if (!text.ok()) return text.status();
  Result<json::Value> doc = json::Parse(*text);
  if (!doc.ok()) return doc.status();
  const json::Value* bootstrapped = doc->Find("bootstrapped");
  const json::Value* request = doc->Find("request");
  if (!bootstrapped || !bootstrapped->is_bool() || !request) {
    return Status::InvalidRequest("the upgrade's secrets are malformed");
  }
  if (!bootstrapped->as_bool()) return Status::Ok();
  Result<BootstrapRequest> decoded = DecodeBootstrapRequest(*request);
  if (!decoded.ok()) return decoded.status();
  bootstrap.Install(std::move(*decoded));
  return Status::Ok();
}

size_t ListenerCount(const DaemonConfig& config) {
  return config.listen.empty() ? 1 : config.listen.size();
}

// `agentd --upgrade-check FILE FLAGS...`: run by a daemon on its successor
// before it execs it; exit 0 only when this binary can take the state over.
int CheckUpgradeState(const std::string& path, const DaemonConfig& config) {
  Result<std::string> text = ReadFileToString(path, 64 << 20);
  Result<HandoverState> state = text.ok() ? DecodeHandover(*text) : text.status();
  if (state.ok() && state->listeners.size() != ListenerCount(config)) {
    state = Status::InvalidRequest("the upgrade state hands over " +
                                   std::to_string(state->listeners.size()) + " listeners for " +
                                   std::to_string(ListenerCount(config)) + " --listen addresses");
  }
  if (!state.ok()) {
    std::fprintf(stderr, "agentd --upgrade-check: %s\n", state.status().message().c_str());
    return 1;
  }
  return 0;
}

int Serve(DaemonConfig& config, std::vector<std::string> argv,
          std::optional<HandoverState> resume) {
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
  if (resume) {
    if (Status s = RestoreSecrets(resume->secrets_fd, bootstrap); !s.ok()) {
      std::fprintf(stderr, "agentd: %s\n", s.message().c_str());
      return 1;
    }
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
  // As PID 1 the daemon's death ends the whole PID namespace: a holder
  // could keep nothing alive, so execs are its children as before.
  if (config.init) config.engine.exec_holder = false;
  ExecEngine exec(io, blocking, config.engine, bootstrap);
  if (resume) {
    ctx.started_at -= std::chrono::milliseconds(resume->uptime_ms);
    exec.ExpectHandover(std::move(resume->execs), resume->generation);
    ctx.handed_contexts = std::move(resume->contexts);
  }
  // PID 1 mode's workload. Its stop goes through the io loop: an adopted
  // workload that ended during an upgrade is reaped inside exec.Open(),
  // before the daemon's stop exists.
  std::unique_ptr<InitWorkload> init;
  std::function<void(int)> init_stop;
  if (config.init) {
    init = std::make_unique<InitWorkload>(
        io, exec.reaper(), config.command, config.exit_with_cmd, config.init_user,
        [&io, &init_stop](int code) { asio::post(io, [&init_stop, code] { init_stop(code); }); });
    // Watched before the reaper's first loop, so its exit stays its own.
    if (resume && resume->init_pid) init->Adopt(static_cast<pid_t>(*resume->init_pid));
  }
  if (Status s = exec.Open(); !s.ok()) {
    std::fprintf(stderr, "agentd: %s\n", s.message().c_str());
    return 1;
  }

  // Temporaries a killed predecessor left beside files and trees go now.
  TempJournal::Enable(exec.state_dir() + "/temporaries");
  // A reset's next token that the token file could not take (a read-only
  // secret) is in force while the file is unchanged; an upgrade's handed
  // over token came first.
  if (!config.token_file.empty() && !resume) {
    if (std::optional<std::string> rotated =
            LoadRotatedToken(exec.state_dir(), config.token_file)) {
      bootstrap.SetToken(std::move(*rotated));
    }
  }

  Router router;
  // New runs, launches and resets wait here while an upgrade is pending.
  RequestHold hold(io);
  router.SetHold(&hold);
  router.SetAuthorizer([&bootstrap](const Request& req) {
    return bootstrap.Authorize(req.Header("authorization"));
  });
  RegisterBootstrapRoutes(router, ctx);
  RegisterHealthRoutes(router, ctx);
  RegisterExecRoutes(router, ctx, exec);
  RegisterRunRoutes(router, ctx, exec);
  RegisterContextRoutes(router, ctx, exec);
  RegisterMetricsRoutes(router);
  RegisterFsFileRoutes(router, ctx, **fs);
  RegisterFsMetaRoutes(router, ctx, **fs);
  RegisterFsEditRoutes(router, ctx, **fs);
  RegisterFsTarRoutes(router, ctx, **fs);
  RegisterFsSearchRoutes(router, ctx, **fs);
  RegisterFsWatchRoutes(router, ctx, **fs, io);
  RegisterPortRoutes(router, ctx, io);
  // PID 1 mode's workload is the operator's, not a tenant's: a reset
  // spares its subtree.
  GuestResetOptions reset_options;
  reset_options.token_file = config.token_file;
  reset_options.reset_paths = config.reset_paths;
  if (reset_options.reset_paths.empty() && !config.engine.workdir.empty()) {
    reset_options.reset_paths.push_back(config.engine.workdir);
  }
  reset_options.reset_baselines = config.reset_baselines;
  reset_options.scratch_dirs = config.reset_scratch;
  reset_options.overlay = config.reset_overlay;
  // PID 1 is in the guest's own IPC namespace (a container, a VM): nothing
  // there but the image and the tenant.
  reset_options.sweep_ipc = config.reset_ipc || ::getpid() == 1;
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
  RegisterDrainGate(router, ctx);
  // Health checks the state directory with a real write, at most every
  // quarter second (probes poll every few seconds; a poll loop stays cheap).
  WriteProbe state_probe(exec.state_dir(), std::chrono::milliseconds(250));
  ctx.state_dir_writable = [&state_probe] { return state_probe.Check(); };

  HttpServer server(io, config.limits, [&router](Request& req, Response& res) {
    return DispatchCounted(router, req, res);
  });
  RegisterServeMetrics(ctx, exec, server);
  // A reset ends every stream, those an upgrade handed over (which belong
  // to no connection) too.
  ctx.close_all_but = [&server, &ctx](const Connection* keep) {
    server.CloseAllBut(keep);
    ctx.streams.CloseAll();
  };
  for (size_t i = 0; i < config.listen.size(); ++i) {
    const ListenAddress& address = config.listen[i];
    Status s = resume
                   ? (i < resume->listeners.size()
                          ? server.Adopt(address, resume->listeners[i])
                          : Status::InvalidRequest("no listener handed over for " + address.text))
                   : server.Listen(address);
    if (!s.ok()) {
      std::fprintf(stderr, "agentd: %s\n", s.message().c_str());
      return 1;
    }
  }

  // The tunnels, watch streams and waiting connections the previous binary
  // served go on.
  ctx.streams.SetAdopter("connection",
                         [&server](const json::Value& e) { return server.AdoptConnection(e); });
  if (resume && !resume->streams.empty()) {
    size_t adopted = ctx.streams.Adopt(resume->streams);
    Log(LogLevel::kInfo, "streams taken over",
        json::Object().Set("streams", resume->streams.size()).Set("adopted", adopted));
  }

  int exit_code = 0;
  bool stopping = false;
  Upgrader upgrader(
      io, exec.reaper(), exec.state_dir(), std::move(argv), config.upgrade_binary,
      config.upgrade_wait,
      UpgradeSources{
          .ready =
              [&reuse, &stopping, &init] {
                if (stopping || (init && init->stop_requested())) {
                  return Status::Error(ErrorCode::kShuttingDown, "the daemon is stopping");
                }
                if (reuse.state() == GuestReset::State::kReady) return Status::Ok();
                return Status::Error(
                    ErrorCode::kResetting,
                    "the guest is " + std::string(reuse.state_name()) + "; retry once it is ready");
              },
          // What cannot end by itself first (it refuses at once), then the
          // work an upgrade waits for.
          .busy = [&]() -> std::optional<BusyReason> {
            if (stopping || (init && init->stop_requested())) {
              return BusyReason{"the daemon is stopping", {}, false};
            }
            if (reuse.state() == GuestReset::State::kQuarantined) {
              return BusyReason{"the guest is quarantined", {}, false};
            }
            std::optional<BusyReason> exec_busy = exec.UpgradeBlocker();
            if (exec_busy && !exec_busy->transient) return exec_busy;
            if (std::optional<BusyReason> c = ctx.context_blocker()) return c;
            if (std::optional<BusyReason> r = hold.Oldest()) return r;
            if (reuse.state() != GuestReset::State::kReady) {
              return BusyReason{"a guest reset", {}, true};
            }
            return exec_busy;
          },
          .hold = [&hold](bool on) { hold.SetPending(on); },
          .held = [&hold] { return hold.held(); },
          .handing_over = [&server](bool on) { server.SetHandingOver(on); },
          .reads_settled = [&server] { return server.FirstReadsSettled(); },
          .contexts = [&ctx](std::vector<int>& fds) { return ctx.hand_over_contexts(fds); },
          .execs = [&exec](std::vector<int>& fds) { return exec.HandOver(fds); },
          .listeners = [&server] { return server.ListenerFds(); },
          .streams =
              [&ctx, &server](std::vector<int>& fds) {
                json::Array streams = ctx.streams.HandOver(fds);
                for (json::Value& c : server.HandOverWaiting(fds)) streams.push_back(std::move(c));
                return streams;
              },
          .secrets = [&bootstrap] { return EncodeSecrets(bootstrap); },
          .generation = [&exec] { return exec.generation(); },
          .init_pid = [&init]() -> std::optional<int64_t> {
            if (!init) return std::nullopt;
            return init->pid();
          },
          .uptime_ms =
              [&ctx] {
                return std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - ctx.started_at)
                    .count();
              },
      });
  ctx.draining = [&stopping, &init] { return stopping || (init && init->stop_requested()); };
  if (resume) upgrader.Carry(*resume);
  ctx.upgrades = [&upgrader] { return UpgradeCounts{upgrader.upgrades(), upgrader.failures()}; };
  ctx.upgrade_state = [&upgrader] { return upgrader.State(); };
  // A pending upgrade looks again whenever what it may wait for ended.
  exec.SetOnSettled([&upgrader] { upgrader.Wake(); });
  hold.OnLeave([&upgrader] { upgrader.Wake(); });

  auto stop = [&](json::Object why, int code) {
    if (stopping) return;
    stopping = true;
    exit_code = code;
    Log(LogLevel::kInfo, "shutting down", std::move(why));
    upgrader.Wake();  // a pending upgrade is refused now
    exec.Shutdown();
    // Connections drain while the killed execs end, so their exits are
    // recorded before the daemon stops; the listeners stay open until then
    // and health answers 503 "draining".
    server.Shutdown(config.shutdown_grace, [&] {
      exec.WhenFinished(config.shutdown_grace, [&] {
        server.StopListening();
        server.CloseAllBut(nullptr);
        io.stop();
      });
    });
  };
  // PID 1 mode owns the signals (it forwards them) and upgrades on a
  // real-time signal of its own (upgrade/upgrader.h); otherwise they stop
  // us, and SIGUSR2 upgrades in place.
  asio::signal_set signals(io);
  asio::signal_set upgrade_signal(io);
  std::function<void()> await_upgrade = [&] {
    upgrade_signal.async_wait([&](const asio::error_code& ec, int) {
      if (ec) return;
      if (!stopping) upgrader.Request();
      await_upgrade();
    });
  };
  if (config.init) {
    init_stop = [&](int code) { stop(json::Object().Set("init_exit_code", code), code); };
    if (Status s = init->Start(exec.child_nofile()); !s.ok()) {
      std::fprintf(stderr, "agentd: %s\n", s.message().c_str());
      return 1;
    }
    upgrade_signal.add(InitUpgradeSignal());
    await_upgrade();
    upgrader.WritePidFile(InitUpgradeSignal());
  } else {
    signals.add(SIGTERM);
    signals.add(SIGINT);
    signals.async_wait([&](const asio::error_code& ec, int signo) {
      if (!ec) stop(json::Object().Set("signal", signo), 0);
    });
    upgrade_signal.add(SIGUSR2);
    await_upgrade();
    upgrader.WritePidFile(SIGUSR2);
  }

  Log(LogLevel::kInfo, "ready",
      json::Object()
          .Set("version", std::string(DaemonVersion()))
          .Set("bootstrapped", bootstrap.bootstrapped())
          .Set("upgrades", upgrader.upgrades()));
  if (resume) upgrader.Resumed();
  io.run();
  exec.SetOnSettled(nullptr);  // the upgrader goes before the engine and the hold
  hold.OnLeave(nullptr);
  upgrader.RemovePidFile();
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
  // Hidden first arguments, only ever given by a daemon upgrading in place
  // (upgrade/upgrader.h): --upgrade-check FILE and --upgrade-resume FILE.
  std::string_view mode = argc > 2 ? argv[1] : "";
  bool check = mode == "--upgrade-check";
  bool resume = mode == "--upgrade-resume";
  std::string state_file = check || resume ? argv[2] : "";
  int skip = check || resume ? 2 : 0;
  std::vector<std::string> args(argv, argv + argc);
  args.erase(args.begin() + 1, args.begin() + 1 + skip);
  std::vector<const char*> flag_argv;
  for (const std::string& a : args) flag_argv.push_back(a.c_str());
  agentd::Result<ParsedFlags> flags =
      agentd::ParseFlags(static_cast<int>(flag_argv.size()), flag_argv.data());
  if (!flags.ok()) {
    std::fprintf(stderr, "agentd: %s\nTry 'agentd --help'.\n", flags.status().message().c_str());
    return 2;
  }
  if (check) return agentd::CheckUpgradeState(state_file, flags->config);
  switch (flags->action) {
    case ParsedFlags::Action::kHelp:
      std::fputs(agentd::HelpText().c_str(), stdout);
      return 0;
    case ParsedFlags::Action::kVersion:
      std::printf("agentd %s (protocol 1)\n", std::string(agentd::DaemonVersion()).c_str());
      return 0;
    case ParsedFlags::Action::kUpgrade:
      return agentd::RunUpgradeCommand(flags->config.engine.state_dir);
    case ParsedFlags::Action::kRun:
      break;
  }
  std::optional<agentd::HandoverState> handed;
  if (resume) {
    agentd::Result<std::string> text = agentd::ReadFileToString(state_file, 64 << 20);
    agentd::Result<agentd::HandoverState> state =
        text.ok() ? agentd::DecodeHandover(*text) : text.status();
    if (!state.ok()) {
      // Past the execve there is no old daemon to fall back to: say why.
      std::fprintf(stderr, "agentd: cannot resume the upgrade: %s\n",
                   state.status().message().c_str());
      return 1;
    }
    handed = std::move(*state);
  }
  int code = agentd::Serve(flags->config, std::move(args), std::move(handed));
#if defined(AGENTD_THREAD_SANITIZER)
  // ThreadSanitizer builds only: the orderly shutdown is done (state and
  // logs written), and exit's thread_local destructors have crashed inside
  // the sanitizer's own __tsan_func_entry (a write past its shadow stack,
  // twice at the same address, both in a simdjson parser's destructor,
  // cause not found; docs/TESTING.md, "Kinds of tests"). Race reports are
  // written as they are found (log_path), so skipping exit's handlers
  // hides none.
  std::fflush(nullptr);
  ::_exit(code);
#endif
  return code;
}
