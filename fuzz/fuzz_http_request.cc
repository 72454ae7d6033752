// The HTTP request path, bytes in and response out: each input is what a
// client sends on one connection (pipelining included), through the real
// Connection, llhttp seam, router, auth and the bootstrap, health and file
// routes (confined to a temporary --fs-root). The exec routes are left out
// so the fuzzer cannot start processes; their JSON decoders have their own
// target. The connection must answer and close by itself once the client
// stops sending, and the daemon's state must stay consistent.
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <asio.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "api/api_context.h"
#include "api/fs_service.h"
#include "api/routes.h"
#include "auth/bootstrap_state.h"
#include "config/daemon_config.h"
#include "log/log.h"
#include "server/connection.h"
#include "server/router.h"

namespace agentd {
namespace {

struct Registry : ConnectionRegistry {
  void Remove(uint64_t) override { removed = true; }
  bool removed = false;
};

struct World {
  World() {
    SetLogLevel(LogLevel::kError);
    // A fixed path, so the seeds (fuzz/make_seeds.py) can name files in it.
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
    if (::mkdir(root.c_str(), 0700) != 0) std::abort();
    config.fs_root = root;
    config.limits.header_timeout = std::chrono::milliseconds(200);
    config.limits.io_timeout = std::chrono::milliseconds(200);
    config.limits.idle_timeout = std::chrono::milliseconds(200);
    bootstrap.SetToken("fuzz-token");
    Result<std::unique_ptr<FsService>> created = FsService::Create(config);
    if (!created.ok()) std::abort();
    fs = std::move(*created);
    RegisterBootstrapRoutes(router, ctx);
    RegisterHealthRoutes(router, ctx);
    RegisterFsFileRoutes(router, ctx, *fs);
    RegisterFsMetaRoutes(router, ctx, *fs);
    RegisterFsTarRoutes(router, ctx, *fs);
    router.SetAuthorizer(
        [this](const Request& req) { return bootstrap.Authorize(req.Header("authorization")); });
  }

  std::string root = "/tmp/agentd-fuzz-http-root";
  DaemonConfig config;
  BootstrapState bootstrap;
  asio::io_context io{1};
  asio::thread_pool blocking{1};
  ApiContext ctx{config, bootstrap, blocking};
  std::unique_ptr<FsService> fs;
  Router router;
  RequestHandler handler = [this](Request& req, Response& res) {
    return router.Dispatch(req, res);
  };
};

World& TheWorld() {
  static World* world = new World();  // lives until exit, as the daemon's does
  return *world;
}

}  // namespace
}  // namespace agentd

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace agentd;
  World& w = TheWorld();
  asio::local::stream_protocol::socket server_end(w.io);
  asio::local::stream_protocol::socket client(w.io);
  asio::local::connect_pair(server_end, client);
  Socket socket(w.io, StreamProtocol(AF_UNIX, 0), server_end.release());

  Registry registry;
  static uint64_t next_id = 1;
  auto conn = std::make_shared<Connection>(std::move(socket), w.config.limits, w.handler, registry,
                                           next_id++);
  conn->Start();

  std::string request(reinterpret_cast<const char*>(data), size);
  bool sent = false;
  bool closed = false;
  std::string response;
  char buf[65536];
  asio::async_write(client, asio::buffer(request), [&](const asio::error_code&, size_t) {
    asio::error_code ignored;
    client.shutdown(asio::socket_base::shutdown_send, ignored);
    sent = true;
  });
  std::function<void()> read_more = [&] {
    client.async_read_some(asio::buffer(buf), [&](const asio::error_code& ec, size_t n) {
      response.append(buf, n);
      if (ec) {
        closed = true;
        return;
      }
      read_more();
    });
  };
  read_more();
  conn.reset();
  while (!(sent && closed && registry.removed)) {
    w.io.run_for(std::chrono::milliseconds(5));
    w.io.restart();
  }
  // Whatever came back is HTTP responses.
  if (!response.empty() && !response.starts_with("HTTP/1.1 ")) std::abort();
  return 0;
}
