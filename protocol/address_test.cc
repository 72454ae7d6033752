#include "agentd/protocol/address.h"

#include <catch2/catch.hpp>

using namespace agentd;

TEST_CASE("listen addresses: tcp, bracketed IPv6, localhost, any, unix and vsock", "[address]") {
  Result<Address> tcp = ParseListenAddress("10.0.0.1:7700");
  REQUIRE(tcp.ok());
  CHECK(tcp->kind == Address::Kind::kTcp);
  CHECK(tcp->host == "10.0.0.1");
  CHECK(tcp->port == 7700);
  CHECK(ParseListenAddress("[::1]:80")->host == "::1");
  CHECK(ParseListenAddress("localhost:1")->host == "127.0.0.1");
  CHECK(ParseListenAddress(":9")->host == "0.0.0.0");
  CHECK(ParseListenAddress("127.0.0.1:0")->port == 0);  // a free port
  Result<Address> unix_addr = ParseListenAddress("unix:/run/agentd.sock");
  REQUIRE(unix_addr.ok());
  CHECK(unix_addr->kind == Address::Kind::kUnix);
  CHECK(unix_addr->path == "/run/agentd.sock");
  Result<Address> vsock = ParseListenAddress("vsock:4294967295");
  REQUIRE(vsock.ok());
  CHECK(vsock->kind == Address::Kind::kVsock);
  CHECK(vsock->port == 4294967295u);
}

TEST_CASE("listen addresses refuse bad ports, missing ports and oversized paths", "[address]") {
  std::string longest = "unix:/" + std::string(kMaxUnixSocketPathBytes - 1, 'a');
  CHECK(ParseListenAddress(longest).ok());
  for (const std::string& bad :
       {std::string("1.2.3.4:99999"), std::string("1.2.3.4"), std::string("1.2.3.4:-1"),
        std::string("1.2.3.4:"), std::string("unix:"), std::string("vsock:x"),
        std::string("vsock:4294967296"), longest + "a"}) {
    INFO(bad);
    Result<Address> r = ParseListenAddress(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kInvalidRequest);
    CHECK(r.status().message().find("invalid listen address") == 0);
  }
}

TEST_CASE("daemon URLs: http with names and default port, unix and vsock", "[address]") {
  Result<Address> tcp = ParseDaemonUrl("http://guest.internal");
  REQUIRE(tcp.ok());
  CHECK(tcp->host == "guest.internal");
  CHECK(tcp->port == 80);
  Result<Address> v6 = ParseDaemonUrl("http://[fe80::1]:7700/");
  REQUIRE(v6.ok());
  CHECK(v6->host == "fe80::1");
  CHECK(v6->port == 7700);
  CHECK(ParseDaemonUrl("unix:///run/a.sock")->path == "/run/a.sock");
  CHECK(ParseDaemonUrl("unix:/run/a.sock")->path == "/run/a.sock");
  Result<Address> vsock = ParseDaemonUrl("vsock://3:7700");
  REQUIRE(vsock.ok());
  CHECK(vsock->kind == Address::Kind::kVsock);
  CHECK(vsock->cid == 3);
  CHECK(vsock->port == 7700);
}

TEST_CASE("daemon URLs refuse what a client cannot reach, naming the url", "[address]") {
  std::string too_long = "unix:/" + std::string(kMaxUnixSocketPathBytes, 'a');
  for (const std::string& bad :
       {std::string("https://x:1"), std::string("http://:80"), std::string("http://x:0"),
        std::string("http://x:65536"), std::string("http://x:1/v1/health"),
        std::string("http://[::1"), std::string("http://[::1]x"), std::string("vsock:3"),
        std::string("unix:"), std::string("ftp://x"), too_long}) {
    INFO(bad);
    Result<Address> r = ParseDaemonUrl(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kInvalidRequest);
    CHECK(r.status().details().Find("url")->as_string() == bad);
  }
}
