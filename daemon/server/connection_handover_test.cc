#include <fcntl.h>
#include <sys/ioctl.h>
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

// Bytes the kernel holds for `fd`, not yet read by anyone.
int Unread(int fd) {
  int n = -1;
  REQUIRE(::ioctl(fd, FIONREAD, &n) == 0);
  return n;
}

// The head the one handed-over connection would carry.
std::string HandedHead(const HttpServer& server) {
  std::vector<int> fds;
  json::Array entries = server.HandOverWaiting(fds);
  REQUIRE(entries.size() == 1);
  return Base64Decode(entries[0].Find("head_b64")->as_string()).value();
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

// The window: an idle connection's read took the bytes from the kernel
// (Asio reads at the start of an operation and queues its completion), the
// upgrade became pending before that completion ran, and the state written
// then carried an empty head: the execve lost the bytes and the client
// waited for its idle timeout.
TEST_CASE("bytes an idle connection's read took before the upgrade are in the head it hands over",
          "[server][upgrade]") {
  asio::io_context io(1);
  HttpServer server(io, ServerLimits{}, AnswerOk);
  int pair[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
  std::string sent = "GET / HTTP/1.1\r\nHo";  // half a head: the connection waits on
  REQUIRE(::write(pair[1], sent.data(), sent.size()) == static_cast<ssize_t>(sent.size()));
  REQUIRE(server.AdoptConnection(ConnectionEntry(pair[0], "")[0]).ok());
  while (Unread(pair[0]) > 0) REQUIRE(io.run_one() == 1);
  REQUIRE(HandedHead(server).empty());  // the window: read, but not in the head yet

  server.SetHandingOver(true);  // the upgrade begins
  while (!server.FirstReadsSettled()) REQUIRE(io.run_one() == 1);
  CHECK(HandedHead(server) == sent);
  ::close(pair[1]);
}

TEST_CASE("an idle connection whose read the upgrade stopped stays open and is answered",
          "[server][upgrade]") {
  asio::io_context io(1);
  HttpServer server(io, ServerLimits{}, AnswerOk);
  int pair[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
  REQUIRE(server.AdoptConnection(ConnectionEntry(pair[0], "")[0]).ok());
  io.poll();  // it waits for its first byte with a read
  server.SetHandingOver(true);
  io.poll();  // the stopped read's completion
  CHECK(server.FirstReadsSettled());
  CHECK(HandedHead(server).empty());  // still waiting, not closed
  server.SetHandingOver(false);       // the upgrade failed: this binary serves on
  std::string request = "GET / HTTP/1.1\r\nConnection: close\r\n\r\n";
  REQUIRE(::write(pair[1], request.data(), request.size()) == static_cast<ssize_t>(request.size()));
  io.run();  // until the connection answered and closed
  CHECK(ReadUntilClose(pair[1]).starts_with("HTTP/1.1 200 "));
  ::close(pair[1]);
}
