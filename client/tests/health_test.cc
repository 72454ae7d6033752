// Health on a daemon that cannot take work (docs/CLIENT.md, "Health"): a
// 503 that carries the daemon's health document is Health()'s answer, with
// its status and reason; any other 503 (a proxy's, garbage) stays an error.
// A fake answers every request with one canned response. The real daemon's
// draining and unwritable states are in tests/test_client_health.py.
#include <catch2/catch.hpp>
#include <string>

#include "agentd/client/client.h"
#include "fake_daemon.h"

using namespace agentd;
using namespace agentd::client;
using agentd::testing::FakeDaemon;

namespace {

std::string Answer503(const std::string& body) {
  return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

ClientOptions To(const FakeDaemon& fake) {
  ClientOptions o;
  o.url = fake.url();
  o.max_attempts = 2;
  o.backoff_initial = std::chrono::milliseconds(1);
  return o;
}

}  // namespace

TEST_CASE("a 503 health carrying the daemon's document is the answer, with its reason",
          "[client][health]") {
  FakeDaemon fake(Answer503(
      R"({"status":"state_dir_unwritable","version":"0.1.0","protocol":1,)"
      R"("bootstrapped":true,"busy":false,"execs":0,"uptime_ms":5,"runtimes":[],)"
      R"("reason":"cannot write /s/.write-probe: Read-only file system","errno":"EROFS"})"));
  Client c(To(fake));
  Result<HealthResponse> h = c.Health();
  REQUIRE(h.ok());
  CHECK(h->status == "state_dir_unwritable");
  CHECK(h->reason == "cannot write /s/.write-probe: Read-only file system");
  CHECK(h->errno_name == "EROFS");
}

TEST_CASE("a 503 health without the daemon's document stays an error", "[client][health]") {
  for (const char* body : {R"({"message":"no healthy upstream"})", "<html>busy</html>",
                           R"({"status":"draining","protocol":1})"}) {
    INFO(body);
    FakeDaemon fake(Answer503(body));
    Client c(To(fake));
    Result<HealthResponse> h = c.Health();
    REQUIRE_FALSE(h.ok());
    CHECK(h.status().http_status() == 503);
  }
}
