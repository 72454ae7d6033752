// RequestHold (server/request_hold.h): while an upgrade is pending, the
// requests that would keep the daemon busy wait; once released they run,
// and those counted are in flight until answered.
#include "server/request_hold.h"

#include <catch2/catch.hpp>

using namespace agentd;

namespace {

// Runs what is ready on the io context now, without blocking.
void RunReady(asio::io_context& io) {
  io.restart();
  io.poll();
}

// Starts a request's Enter on `io`: `token` is its in-flight token and
// `entered` turns true once the hold let it through.
void SpawnEnter(asio::io_context& io, RequestHold& hold, const char* method, const char* route,
                const char* target, std::shared_ptr<void>& token, bool& entered) {
  asio::co_spawn(
      io,
      [&hold, &token, &entered, method, route, target]() -> asio::awaitable<void> {
        token = co_await hold.Enter(method, route, target);
        entered = true;
      },
      asio::detached);
}

}  // namespace

TEST_CASE("a run asked for while an upgrade is pending waits, then is in flight until answered",
          "[hold]") {
  asio::io_context io;
  RequestHold hold(io);
  int leaves = 0;
  hold.OnLeave([&leaves] { ++leaves; });
  hold.SetPending(true);
  bool entered = false;
  std::shared_ptr<void> token;
  SpawnEnter(io, hold, "POST", "/v1/run", "/v1/run", token, entered);
  RunReady(io);
  CHECK_FALSE(entered);
  CHECK(hold.held() == 1);
  CHECK_FALSE(hold.Oldest());  // held is not in flight: the upgrade need not wait for it
  hold.SetPending(false);
  RunReady(io);
  REQUIRE(entered);
  CHECK(hold.held() == 0);
  REQUIRE(hold.Oldest());
  CHECK(hold.Oldest()->what == "the request POST /v1/run");
  CHECK(hold.Oldest()->transient);
  token.reset();
  CHECK(leaves == 1);
  CHECK_FALSE(hold.Oldest());
}

TEST_CASE("an exec start is held but not counted; reads are neither", "[hold]") {
  CHECK(RequestHold::Concerns("PUT", "/v1/execs/{id}"));
  CHECK(RequestHold::Concerns("POST", "/v1/contexts/{id}/reset"));
  CHECK_FALSE(RequestHold::Concerns("GET", "/v1/execs/{id}"));
  CHECK_FALSE(RequestHold::Concerns("POST", "/v1/execs/{id}/stdin"));
  asio::io_context io;
  RequestHold hold(io);
  bool entered = false;
  std::shared_ptr<void> token;
  SpawnEnter(io, hold, "PUT", "/v1/execs/{id}", "/v1/execs/a", token, entered);
  RunReady(io);
  CHECK(entered);  // nothing pending: no wait
  CHECK_FALSE(hold.Oldest());
}
