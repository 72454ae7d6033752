#include <catch2/catch.hpp>

#include "server/listen_address.h"

using namespace agentd;

TEST_CASE("listen addresses parse tcp, unix and vsock forms", "[listen]") {
  auto tcp = ListenAddress::Parse("0.0.0.0:7700");
  REQUIRE(tcp.ok());
  CHECK(tcp->kind == ListenAddress::Kind::kTcp);
  CHECK(tcp->port == 7700);
  auto v6 = ListenAddress::Parse("[::1]:80");
  REQUIRE(v6.ok());
  CHECK(v6->host == "::1");
  CHECK(ListenAddress::Parse("localhost:1")->host == "127.0.0.1");
  auto unix_addr = ListenAddress::Parse("unix:/run/agentd.sock");
  REQUIRE(unix_addr.ok());
  CHECK(unix_addr->path == "/run/agentd.sock");
  auto vsock = ListenAddress::Parse("vsock:5000");
  REQUIRE(vsock.ok());
  CHECK(vsock->port == 5000);
}

TEST_CASE("listen addresses refuse names, bad ports and empty paths", "[listen]") {
  for (const char* bad :
       {"example.com:80", "1.2.3.4:99999", "1.2.3.4", "unix:", "vsock:x", "1.2.3.4:-1"}) {
    INFO(bad);
    CHECK_FALSE(ListenAddress::Parse(bad).ok());
  }
}
