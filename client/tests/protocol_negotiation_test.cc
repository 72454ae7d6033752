// Version negotiation (docs/CLIENT.md, "Version negotiation"): on first use
// the client reads `protocol` from /v1/health and refuses a daemon of
// another major with protocol_mismatch naming both versions; a newer minor
// keeps working. The daemon reports only its own protocol, so a fake that
// answers every request with one health body stands in for other versions.
#include <catch2/catch.hpp>
#include <string>

#include "agentd/client/client.h"
#include "agentd/client/error_class.h"
#include "daemon_process.h"
#include "fake_daemon.h"

using namespace agentd;
using namespace agentd::client;
using agentd::testing::DaemonProcess;
using agentd::testing::FakeDaemon;

namespace {

// A health body that also passes as a port list (with members no client
// knows), so one canned answer serves the check and the call after it.
std::string HealthAnswer(const std::string& protocol, const std::string& version) {
  std::string body = R"({"status":"ok","version":")" + version + R"(","protocol":)" + protocol +
                     R"(,"bootstrapped":true,"busy":false,"execs":0,"uptime_ms":1,)" +
                     R"("runtimes":["shell"],"added_later":{"x":1},)" +
                     R"("ports":[{"port":8000,"address":"127.0.0.1","family":"ipv4"}]})";
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

ClientOptions To(const FakeDaemon& fake) {
  ClientOptions o;
  o.url = fake.url();
  o.token = "t";
  o.max_attempts = 1;
  return o;
}

}  // namespace

TEST_CASE("a daemon of another protocol major is refused naming both versions",
          "[client][protocol]") {
  FakeDaemon fake(HealthAnswer("2", "2.0.0"));
  Client c(To(fake));
  Result<std::vector<GuestPort>> ports = c.ListPorts();
  REQUIRE(!ports.ok());
  CHECK(ports.status().code() == ErrorCode::kProtocolMismatch);
  CHECK(ErrorClassOf(ports.status()) == "ProtocolMismatch");
  CHECK(ports.status().message().find("protocol 2 (agentd 2.0.0)") != std::string::npos);
  CHECK(ports.status().message().find("this client speaks protocol 1") != std::string::npos);
  // Remembered: the next call is refused too; health itself still answers.
  CHECK(c.ListExecs().status().code() == ErrorCode::kProtocolMismatch);
  Result<HealthResponse> h = c.Health();
  REQUIRE(h.ok());
  CHECK(h->protocol == 2);
}

TEST_CASE("a newer minor of this protocol keeps working", "[client][protocol]") {
  FakeDaemon fake(HealthAnswer("1", "1.9.0"));
  Client c(To(fake));
  Result<std::vector<GuestPort>> ports = c.ListPorts();
  REQUIRE(ports.ok());
  CHECK(ports->size() == 1);
  FakeDaemon dotted(HealthAnswer("\"1.4\"", "1.4.0"));
  Client d(To(dotted));
  CHECK(d.ListPorts().ok());
  FakeDaemon other(HealthAnswer("\"3.0\"", "3.0.0"));
  Client e(To(other));
  CHECK(e.ListPorts().status().code() == ErrorCode::kProtocolMismatch);
}

TEST_CASE("the real daemon speaks this client's protocol", "[client][protocol]") {
  DaemonProcess d;
  Client c(d.client_options());
  Result<std::vector<ExecInfo>> execs = c.ListExecs();
  REQUIRE(execs.ok());
  Result<HealthResponse> h = c.Health();
  REQUIRE(h.ok());
  CHECK(h->protocol == 1);
}
