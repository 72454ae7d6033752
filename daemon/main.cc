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
#include "server/http_server.h"
#include "server/router.h"

namespace agentd {
namespace {

int Serve(DaemonConfig& config) {
  SetLogLevel(config.log_level);
  ::signal(SIGPIPE, SIG_IGN);  // a vanished peer is an error code, not a death
  if (config.listen.empty()) config.listen.push_back(*ParseListenAddress(kDefaultListen));

  BootstrapState bootstrap;
  if (!config.token_file.empty()) {
    Result<std::string> token = ReadTokenFile(config.token_file);
    if (!token.ok()) {
      std::fprintf(stderr, "agentd: %s\n", token.status().message().c_str());
      return 1;
    }
    bootstrap.SetToken(std::move(*token));
  }

  Result<std::unique_ptr<FsService>> fs = FsService::Create(config);
  if (!fs.ok()) {
    std::fprintf(stderr, "agentd: %s\n", fs.status().message().c_str());
    return 1;
  }

  asio::io_context io(1);
  asio::thread_pool blocking(2);
  ApiContext ctx{config, bootstrap, blocking};
  ExecEngine exec(io, blocking, config, bootstrap);
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
  RegisterFsFileRoutes(router, ctx, **fs);
  RegisterFsMetaRoutes(router, ctx, **fs);
  RegisterFsTarRoutes(router, ctx, **fs);

  HttpServer server(io, config.limits,
                    [&router](Request& req, Response& res) { return router.Dispatch(req, res); });
  for (const ListenAddress& address : config.listen) {
    Status s = server.Listen(address);
    if (!s.ok()) {
      std::fprintf(stderr, "agentd: %s\n", s.message().c_str());
      return 1;
    }
  }

  asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](const asio::error_code& ec, int signo) {
    if (ec) return;
    Log(LogLevel::kInfo, "shutting down", json::Object().Set("signal", signo));
    exec.Shutdown();
    // Connections drain while the killed execs end, so their exits are
    // recorded before the daemon stops.
    server.Shutdown(config.shutdown_grace,
                    [&] { exec.WhenFinished(config.shutdown_grace, [&io] { io.stop(); }); });
  });

  Log(LogLevel::kInfo, "ready",
      json::Object()
          .Set("version", std::string(DaemonVersion()))
          .Set("bootstrapped", bootstrap.bootstrapped()));
  io.run();
  (*fs)->Shutdown();  // jobs blocked on a connection's channel return now
  blocking.join();
  Log(LogLevel::kInfo, "stopped");
  return 0;
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
