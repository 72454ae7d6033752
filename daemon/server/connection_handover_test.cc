#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <memory>
#include <string>

#include "agentd/protocol/base64.h"
#include "server/handed_streams.h"
#include "server/http_server.h"

using namespace agentd;

namespace {

struct IdleRegistry : ConnectionRegistry {
  void Remove(uint64_t) override {}
  bool handing_over() const override { return upgrade_pending; }
  bool upgrade_pending = false;
};

asio::awaitable<void> AnswerOk(Request&, Response& res) {
  json::Value value(json::Object().Set("ok", true));  // named: GCC 12 and co_await
  co_await res.SendJson(200, value);
}

json::Array ConnectionEntry(int fd, std::string_view head) {
  json::Array fds;
  fds.emplace_back(fd);
  json::Array entries;
  entries.push_back(json::Object()
                        .Set("kind", "connection")
                        .Set("fds", std::move(fds))
                        .Set("fd", fd)
                        .Set("head_b64", Base64Encode(head)));
  return entries;
}

std::string ReadUntilClose(int fd) {
  std::string out;
  char buf[4096];
  while (ssize_t n = ::read(fd, buf, sizeof buf)) {
    if (n < 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace

TEST_CASE(
    "a connection waiting mid-head reports the head bytes read so far, not the request before",
    "[server][upgrade]") {
  asio::io_context io(1);
  int pair[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
  ServerLimits limits;
  IdleRegistry registry;
  RequestHandler handler = AnswerOk;
  auto conn = std::make_shared<Connection>(Socket(io, StreamProtocol(AF_UNIX, 0), pair[0]), limits,
                                           handler, registry, 1);
  CHECK(conn->WaitingHead() == std::string_view());  // accepted, nothing read
  conn->Start();
  std::string sent = "GET / HTTP/1.1\r\n\r\nGET /next HTTP/1.1\r\nHo";
  REQUIRE(::write(pair[1], sent.data(), sent.size()) == static_cast<ssize_t>(sent.size()));
  while (conn->WaitingHead().value_or("").empty()) io.run_one();
  CHECK(*conn->WaitingHead() == "GET /next HTTP/1.1\r\nHo");
  conn->Close();
  ::close(pair[1]);
}

// Before any byte a connection holds no buffer; its head is empty, not one
// that outgrew the buffer (0 of 0 bytes), or the upgrade closed it unread.
TEST_CASE("a connection waiting for its first byte reports an empty head once it runs",
          "[server][upgrade]") {
  IdleRegistry registry;
  registry.upgrade_pending = GENERATE(false, true);  // its read, or its wait for readability
  asio::io_context io(1);
  int pair[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
  ServerLimits limits;
  RequestHandler handler = AnswerOk;
  auto conn = std::make_shared<Connection>(Socket(io, StreamProtocol(AF_UNIX, 0), pair[0]), limits,
                                           handler, registry, 1);
  conn->Start();
  CHECK(io.poll() > 0);  // the connection runs until it waits for the peer
  CHECK(conn->WaitingHead() == std::string_view());
  conn->Close();
  ::close(pair[1]);
}

TEST_CASE("a handed-over connection resumes its half-read head and is answered",
          "[server][upgrade]") {
  asio::io_context io(1);
  HttpServer server(io, ServerLimits{}, AnswerOk);
  HandedStreams streams;
  streams.SetAdopter("connection", [&](const json::Value& e) { return server.AdoptConnection(e); });
  int pair[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
  CHECK(streams.Adopt(ConnectionEntry(pair[0], "GET / HTTP/1.1\r\nConn")) == 1);
  std::string rest = "ection: close\r\n\r\n";
  REQUIRE(::write(pair[1], rest.data(), rest.size()) == static_cast<ssize_t>(rest.size()));
  io.run();  // until the connection answered and closed
  CHECK(ReadUntilClose(pair[1]).starts_with("HTTP/1.1 200 "));
  CHECK(server.connection_count() == 0);
  ::close(pair[1]);
}

TEST_CASE("a handed-over connection beyond max_connections is closed, not leaked",
          "[server][upgrade]") {
  asio::io_context io(1);
  ServerLimits limits;
  limits.max_connections = 0;
  HttpServer server(io, limits, AnswerOk);
  HandedStreams streams;
  streams.SetAdopter("connection", [&](const json::Value& e) { return server.AdoptConnection(e); });
  int pair[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
  CHECK(streams.Adopt(ConnectionEntry(pair[0], "")) == 0);
  errno = 0;
  CHECK(::fcntl(pair[0], F_GETFD) == -1);
  CHECK(errno == EBADF);
  CHECK(ReadUntilClose(pair[1]).empty());  // the client sees the close
  ::close(pair[1]);
}
