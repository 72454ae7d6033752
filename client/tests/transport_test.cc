// The client's transport against a real daemon: keep-alive, error mapping,
// deadlines, and the retry policy through a proxy that cuts connections.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <dirent.h>
#include <poll.h>
#include <sys/socket.h>

#include <asio.hpp>
#include <cstdlib>
#include <optional>

#include "agentd/client/client.h"
#include "cutting_proxy.h"
#include "daemon_process.h"
#include "transport.h"

using namespace agentd;
using namespace agentd::client;
using agentd::testing::CuttingProxy;
using agentd::testing::DaemonProcess;

namespace {

ClientOptions QuickBackoffOptions(const std::string& url, const std::string& token) {
  ClientOptions o;
  o.url = url;
  o.token = token;
  o.backoff_initial = std::chrono::milliseconds(5);
  o.backoff_max = std::chrono::milliseconds(20);
  return o;
}

// Options for a peer that accepts and never answers: one attempt, whose
// 200 ms deadline ends the call.
ClientOptions SilentPeerOptions(const asio::ip::tcp::acceptor& silent) {
  ClientOptions o = QuickBackoffOptions(
      "http://127.0.0.1:" + std::to_string(silent.local_endpoint().port()), "t");
  o.request_timeout = std::chrono::milliseconds(200);
  o.max_attempts = 1;
  return o;
}

// This process's TCP connection to 127.0.0.1:`port`, or -1.
int ConnectionTo(int port) {
  DIR* dir = opendir("/proc/self/fd");
  int found = -1;
  while (dirent* e = dir ? readdir(dir) : nullptr) {
    int fd = std::atoi(e->d_name);
    sockaddr_in peer{};
    socklen_t len = sizeof(peer);
    if (fd > 2 && getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0 &&
        peer.sin_family == AF_INET && ntohs(peer.sin_port) == port) {
      found = fd;
    }
  }
  if (dir) closedir(dir);
  return found;
}

}  // namespace

TEST_CASE("client reads health and bootstraps a fresh daemon", "[client]") {
  DaemonProcess d({}, /*bootstrap=*/false);
  Client c(QuickBackoffOptions(d.url(), ""));
  auto h = c.Health();
  REQUIRE(h.ok());
  CHECK_FALSE(h->bootstrapped);
  auto b = c.Bootstrap({"fresh-token", {{"LANG", "C.UTF-8"}}});
  REQUIRE(b.ok());
  CHECK_FALSE(b->replayed);
  auto again = c.Bootstrap({"fresh-token", {}});
  REQUIRE(again.ok());
  CHECK(again->replayed);
  auto other = c.Bootstrap({"other-token", {}});
  REQUIRE_FALSE(other.ok());
  CHECK(other.status().code() == ErrorCode::kAlreadyBootstrapped);
  CHECK(other.status().http_status() == 409);
}

TEST_CASE("client reuses one keep-alive connection for sequential calls", "[client]") {
  DaemonProcess d;
  CuttingProxy proxy(d.port(), [](int) { return UINT64_MAX; });
  Client c(QuickBackoffOptions("http://127.0.0.1:" + std::to_string(proxy.port()), d.token()));
  for (int i = 0; i < 50; ++i) REQUIRE(c.Health().ok());
  CHECK(proxy.connections() == 1);
}

TEST_CASE("client maps daemon errors to their stable codes", "[client]") {
  DaemonProcess d;
  asio::io_context io;
  Transport t(io.get_executor(), QuickBackoffOptions(d.url(), d.token()));
  HttpRequest req;
  req.target = "/v1/no-such-route";
  Result<HttpResponse> r;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { r = co_await t.Call(req); }, asio::detached);
  io.run();
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kRouteNotFound);
  CHECK(r.status().http_status() == 404);
  CHECK(r.status().details().Find("path")->as_string() == "/v1/no-such-route");
}

TEST_CASE("client retries an idempotent call whose connection is cut", "[client][retry]") {
  DaemonProcess d;
  // The first three connections are cut after 10 bytes of the answer.
  CuttingProxy proxy(d.port(), [](int n) { return n < 3 ? uint64_t{10} : UINT64_MAX; });
  Client c(QuickBackoffOptions("http://127.0.0.1:" + std::to_string(proxy.port()), d.token()));
  auto h = c.Health();
  REQUIRE(h.ok());
  CHECK(proxy.cuts() == 3);
  CHECK(proxy.connections() == 4);
}

TEST_CASE("a Run on a keep-alive connection the daemon closed while idle succeeds, started once",
          "[client][retry]") {
  DaemonProcess d({"--idle-timeout-ms", "200"});
  ClientOptions o = QuickBackoffOptions(d.url(), d.token());
  o.max_attempts = 1;  // no attempt to spare: the resend on a closed idle connection is free
  Client c(o);
  ExecStartRequest req;
  req.argv = {"/bin/true"};
  RunOptions run;
  run.ack = false;  // both stay listed
  REQUIRE(c.Run(req, run).ok());
  // The idle connection the client keeps: wait until the daemon closed it
  // (readable with EOF), without reading it.
  int fd = ConnectionTo(d.port());
  REQUIRE(fd >= 0);
  pollfd p{fd, POLLRDHUP, 0};
  REQUIRE(poll(&p, 1, 30'000) == 1);
  run.id = "once-after-idle-close";
  auto r = c.Run(req, run);
  REQUIRE(r.ok());
  CHECK(r->exit_code == 0);
  auto all = c.ListExecs();
  REQUIRE(all.ok());
  CHECK(all->size() == 2);
}

TEST_CASE("client gives up after max_attempts with transport_error", "[client][retry]") {
  DaemonProcess d;
  CuttingProxy proxy(d.port(), [](int) { return uint64_t{0}; });
  ClientOptions o =
      QuickBackoffOptions("http://127.0.0.1:" + std::to_string(proxy.port()), d.token());
  o.max_attempts = 3;
  Client c(o);
  auto h = c.Health();
  REQUIRE_FALSE(h.ok());
  CHECK(h.status().code() == ErrorCode::kTransport);
  CHECK(proxy.connections() == 3);
}

TEST_CASE("client reports deadline_exceeded when the daemon never answers", "[client]") {
  asio::io_context server_io;
  asio::ip::tcp::acceptor silent(server_io, {asio::ip::make_address("127.0.0.1"), 0});
  ClientOptions o = SilentPeerOptions(silent);
  Client c(o);
  auto start = std::chrono::steady_clock::now();
  auto h = c.Health();
  REQUIRE_FALSE(h.ok());
  CHECK(h.status().code() == ErrorCode::kDeadlineExceeded);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("async client reports deadline_exceeded when the daemon never answers, then runs dry",
          "[client][async]") {
  // AsyncClient's reads wait on the socket with a timer handler that cancels
  // the wait: the deadline must end the call, and nothing of the wait may
  // stay queued (io.run() returns once the call completed).
  asio::io_context server_io;
  asio::ip::tcp::acceptor silent(server_io, {asio::ip::make_address("127.0.0.1"), 0});
  ClientOptions o = SilentPeerOptions(silent);
  asio::io_context io;
  AsyncClient c(io.get_executor(), o);
  std::optional<Result<HealthResponse>> got;
  c.AsyncHealth([&](Result<HealthResponse> h) { got.emplace(std::move(h)); });
  io.run();
  REQUIRE(got.has_value());
  REQUIRE_FALSE(got->ok());
  CHECK(got->status().code() == ErrorCode::kDeadlineExceeded);
}

TEST_CASE("client reports transport_error when nothing listens", "[client]") {
  asio::io_context io;
  asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
  int port = a.local_endpoint().port();
  a.close();
  ClientOptions o = QuickBackoffOptions("http://127.0.0.1:" + std::to_string(port), "t");
  o.max_attempts = 2;
  Client c(o);
  auto h = c.Health();
  REQUIRE_FALSE(h.ok());
  CHECK(h.status().code() == ErrorCode::kTransport);
}

TEST_CASE("client speaks over a unix socket", "[client]") {
  DaemonProcess d({"--listen", "unix:/tmp/agentd-client-test.sock"});
  Client c(QuickBackoffOptions("unix:/tmp/agentd-client-test.sock", d.token()));
  auto h = c.Health();
  REQUIRE(h.ok());
  CHECK(h->bootstrapped);
}

TEST_CASE("async client completes with callbacks and futures on one thread", "[client][async]") {
  DaemonProcess d;
  asio::io_context io;
  AsyncClient c(io.get_executor(), QuickBackoffOptions(d.url(), d.token()));
  int callbacks = 0;
  for (int i = 0; i < 20; ++i) {
    c.AsyncHealth([&](Result<HealthResponse> h) {
      REQUIRE(h.ok());
      ++callbacks;
    });
  }
  std::future<Result<HealthResponse>> f = c.AsyncHealth(asio::use_future);
  io.run();
  CHECK(callbacks == 20);
  REQUIRE(f.get().ok());
}
