#include <catch2/catch.hpp>

#include "agentd/client/options.h"

using namespace agentd;
using namespace agentd::client;

TEST_CASE("client URLs parse tcp, unix and vsock forms", "[client][url]") {
  auto tcp = ParseUrl("http://10.0.0.2:7700");
  REQUIRE(tcp.ok());
  CHECK(tcp->kind == Endpoint::Kind::kTcp);
  CHECK(tcp->host == "10.0.0.2");
  CHECK(tcp->port == 7700);
  CHECK(tcp->HostHeader() == "10.0.0.2:7700");
  auto v6 = ParseUrl("http://[::1]:80/");
  REQUIRE(v6.ok());
  CHECK(v6->host == "::1");
  CHECK(v6->HostHeader() == "[::1]:80");
  auto named = ParseUrl("http://guest.internal");
  REQUIRE(named.ok());
  CHECK(named->port == 80);
  auto unix_url = ParseUrl("unix:/run/agentd.sock");
  REQUIRE(unix_url.ok());
  CHECK(unix_url->path == "/run/agentd.sock");
  auto vsock = ParseUrl("vsock:3:7700");
  REQUIRE(vsock.ok());
  CHECK(vsock->cid == 3);
  CHECK(vsock->vsock_port == 7700);
}

TEST_CASE("client URLs refuse what they cannot reach", "[client][url]") {
  for (const char* bad : {"https://x:1", "http://:80", "http://x:0", "http://x:99999",
                          "http://x:1/v1/health", "vsock:3", "unix:", "ftp://x"}) {
    INFO(bad);
    auto r = ParseUrl(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kInvalidRequest);
  }
}
