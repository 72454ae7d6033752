#include "limits/egress_rules.h"

#include <arpa/inet.h>

#include <catch2/catch.hpp>

using namespace agentd;

namespace {

std::array<uint8_t, 16> Addr(const char* text) {
  std::array<uint8_t, 16> a{};
  uint8_t v4[4];
  if (::inet_pton(AF_INET, text, v4) == 1) return MappedV4(v4);
  REQUIRE(::inet_pton(AF_INET6, text, a.data()) == 1);
  return a;
}

std::vector<EgressRule> Table(const std::string& mode, std::vector<std::string> allow = {},
                              std::vector<std::string> deny = {}, bool dns = false,
                              std::vector<std::string> nameservers = {}) {
  EgressPolicy p;
  p.mode = mode;
  p.allow = std::move(allow);
  p.deny = std::move(deny);
  p.dns = dns;
  Result<std::vector<EgressRule>> t = BuildEgressTable(p, nameservers);
  REQUIRE(t.ok());
  return *t;
}

}  // namespace

TEST_CASE("egress rules: IPv4 and IPv6 CIDRs with and without a port", "[egress]") {
  Result<EgressRule> r = ParseEgressRule("203.0.113.7/24:443", true);
  REQUIRE(r.ok());
  CHECK(r->prefix == 96 + 24);
  CHECK(r->port == 443);
  CHECK(r->addr == Addr("203.0.113.0"));  // masked
  r = ParseEgressRule("10.0.0.1", false);
  REQUIRE(r.ok());
  CHECK(r->prefix == 128);
  CHECK(r->port == 0);
  r = ParseEgressRule("[2001:db8::/32]:53", true);
  REQUIRE(r.ok());
  CHECK(r->prefix == 32);
  CHECK(r->port == 53);
  r = ParseEgressRule("fd00::/8", true);
  REQUIRE(r.ok());
  CHECK(r->prefix == 8);
  CHECK(r->port == 0);
}

TEST_CASE("egress rules: malformed entries are refused naming the rule", "[egress]") {
  for (const char* bad : {"", "10.0.0.0/33", "10.0.0.1:0", "10.0.0.1:65536", "10.0.0.1:", "[::1",
                          "[::1]x", "pypi.internal:443", "::1/129", "10.0.0.1/8x"}) {
    Result<EgressRule> r = ParseEgressRule(bad, true);
    INFO(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("egress") != std::string::npos);
  }
}

TEST_CASE("egress public: private, metadata and multicast refused, public and loopback allowed",
          "[egress]") {
  auto t = Table("public");
  for (const char* refused :
       {"10.0.0.1", "172.16.5.5", "192.168.1.1", "100.64.0.1", "169.254.169.254", "0.0.0.0",
        "224.0.0.1", "255.255.255.255", "fd00:ec2::254", "fc00::1", "fe80::1", "ff02::1", "::",
        "::ffff:169.254.169.254", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1"}) {
    INFO(refused);
    CHECK_FALSE(EgressAllows(t, Addr(refused), 80));
  }
  for (const char* allowed : {"8.8.8.8", "203.0.113.9", "127.0.0.1", "127.5.5.5", "::1",
                              "::ffff:127.0.0.1", "2001:4860:4860::8888", "::ffff:8.8.8.8"}) {
    INFO(allowed);
    CHECK(EgressAllows(t, Addr(allowed), 443));
  }
}

TEST_CASE("egress none: only loopback", "[egress]") {
  auto t = Table("none");
  CHECK(EgressAllows(t, Addr("127.0.0.1"), 80));
  CHECK(EgressAllows(t, Addr("::1"), 80));
  CHECK_FALSE(EgressAllows(t, Addr("8.8.8.8"), 443));
  CHECK_FALSE(EgressAllows(t, Addr("2001:4860:4860::8888"), 443));
}

TEST_CASE("egress allow: only the listed CIDR and port; the most specific rule wins", "[egress]") {
  auto t = Table("allow", {"203.0.113.0/24:443", "10.1.0.0/16"}, {"10.1.2.3"});
  CHECK(EgressAllows(t, Addr("203.0.113.9"), 443));
  CHECK_FALSE(EgressAllows(t, Addr("203.0.113.9"), 80));
  CHECK_FALSE(EgressAllows(t, Addr("198.51.100.1"), 443));
  CHECK(EgressAllows(t, Addr("10.1.9.9"), 5432));
  CHECK_FALSE(EgressAllows(t, Addr("10.1.2.3"), 5432));  // the deny is more specific
  CHECK(EgressAllows(t, Addr("::ffff:203.0.113.9"), 443));
}

TEST_CASE("egress: the same CIDR both allowed and denied is denied", "[egress]") {
  auto t = Table("all", {"198.51.100.0/24"}, {"198.51.100.0/24"});
  CHECK_FALSE(EgressAllows(t, Addr("198.51.100.7"), 80));
  CHECK(EgressAllows(t, Addr("198.51.101.7"), 80));
}

TEST_CASE("egress dns: port 53 to the nameservers only", "[egress]") {
  auto t = Table("none", {}, {}, true, {"10.0.0.2", "fe80::1%eth0", "2001:db8::53"});
  CHECK(EgressAllows(t, Addr("10.0.0.2"), 53));
  CHECK_FALSE(EgressAllows(t, Addr("10.0.0.2"), 80));
  CHECK(EgressAllows(t, Addr("2001:db8::53"), 53));
  auto pub = Table("public", {}, {}, true, {"169.254.169.253"});
  CHECK(EgressAllows(pub, Addr("169.254.169.253"), 53));
  CHECK_FALSE(EgressAllows(pub, Addr("169.254.169.254"), 53));
}

TEST_CASE("nameservers from resolv.conf", "[egress]") {
  auto ns = ParseNameservers(
      "# comment\nsearch x\nnameserver 10.0.0.2\nnameserver\t2001:db8::1 # x\nnameserverx 1\n");
  CHECK(ns == std::vector<std::string>{"10.0.0.2", "2001:db8::1"});
}

TEST_CASE("egress names: a host name's rule holds each address it resolved to", "[egress]") {
  CHECK(EgressRuleName("pypi-mirror.internal:8080") == "pypi-mirror.internal");
  CHECK(EgressRuleName("localhost") == "localhost");
  CHECK(EgressRuleName("10.0.0.1:80").empty());
  CHECK(EgressRuleName("2001:db8::1").empty());
  CHECK(EgressRuleName("[2001:db8::1]:443").empty());
  CHECK(EgressRuleName("10.0.0.0/8").empty());
  CHECK_FALSE(CheckNamedRulePort("mirror.internal:0").ok());
  EgressPolicy p;
  p.mode = "allow";
  p.allow = {"mirror.internal:8080"};
  p.deny = {"bad.internal"};
  p.resolved = {{"mirror.internal", {"10.1.2.3", "2001:db8::7"}}, {"bad.internal", {"10.1.2.4"}}};
  Result<std::vector<EgressRule>> t = BuildEgressTable(p, {});
  REQUIRE(t.ok());
  CHECK(EgressAllows(*t, Addr("10.1.2.3"), 8080));
  CHECK(EgressAllows(*t, Addr("2001:db8::7"), 8080));
  CHECK_FALSE(EgressAllows(*t, Addr("10.1.2.3"), 8081));
  CHECK_FALSE(EgressAllows(*t, Addr("10.1.2.4"), 8080));
  p.resolved.pop_back();  // a name nobody resolved is never an empty rule
  Result<std::vector<EgressRule>> missing = BuildEgressTable(p, {});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == ErrorCode::kEgressNameUnresolved);
}
