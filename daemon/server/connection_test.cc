#include "server/connection.h"

#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>

using namespace agentd;

namespace {

struct Registry : ConnectionRegistry {
  void Remove(uint64_t) override { removed = true; }
  bool removed = false;
};

}  // namespace

TEST_CASE("a connection started off the io thread and dropped by its starter still serves",
          "[server][regression]") {
  // Regression (found by fuzz_http_request): Start() relied on co_spawn
  // running the coroutines inline; called outside io.run() they were only
  // queued, and the Connection was freed before they took their reference.
  asio::io_context io(1);
  asio::local::stream_protocol::socket server_end(io);
  asio::local::stream_protocol::socket client(io);
  asio::local::connect_pair(server_end, client);
  ServerLimits limits;
  Registry registry;
  RequestHandler handler = [](Request&, Response& res) -> asio::awaitable<void> {
    json::Object body;
    body.Set("ok", true);
    json::Value value(std::move(body));  // named: no temporaries inside co_await (GCC 12)
    co_await res.SendJson(200, value);
  };
  auto conn = std::make_shared<Connection>(
      Socket(io, StreamProtocol(AF_UNIX, 0), server_end.release()), limits, handler, registry, 1);
  conn->Start();
  conn.reset();

  std::string request = "GET / HTTP/1.1\r\nConnection: close\r\n\r\n";
  asio::write(client, asio::buffer(request));
  io.run();  // until the connection answered and closed
  std::string reply;
  asio::error_code ec;
  char buf[4096];
  while (size_t n = client.read_some(asio::buffer(buf), ec)) reply.append(buf, n);
  CHECK(reply.starts_with("HTTP/1.1 200 "));
  CHECK(registry.removed);
}
