// An egress policy as the table the BPF programs look destinations up in
// (docs/PROTOCOL.md, "Egress"). Pure data, no I/O, unit-tested.
//
// Every address is kept as 16 bytes, IPv4 as IPv4-mapped IPv6
// (::ffff:a.b.c.d, prefix 96 + n): so a connect to ::ffff:169.254.169.254
// through an IPv6 socket meets exactly the rules of 169.254.169.254. A rule
// has a port (0: any port). The most specific rule wins: the longest prefix,
// and at the same prefix a rule naming the port over one for any port; the
// same prefix and port both allowed and denied is denied. No rule: refused.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/protocol/egress.h"
#include "agentd/protocol/status.h"

namespace agentd {

struct EgressRule {
  std::array<uint8_t, 16> addr{};  // masked to the prefix
  int prefix = 0;                  // 0..128 over the 16 bytes
  uint16_t port = 0;               // 0: any port
  bool allow = false;
  bool operator==(const EgressRule&) const = default;
};

// "203.0.113.0/24:443", "10.0.0.1", "10.0.0.1:80", "fd00::/8", "[2001:db8::1]:443",
// "[2001:db8::/32]:53". invalid_request naming the field "egress" otherwise.
Result<EgressRule> ParseEgressRule(std::string_view text, bool allow);

// The host name of a rule ("pypi-mirror.internal" of
// "pypi-mirror.internal:8080"); "" when the rule names an address or CIDR.
std::string EgressRuleName(std::string_view text);
// The port of a host name's rule, checked before the name is resolved.
Status CheckNamedRulePort(std::string_view text);

// The whole table for a policy: the mode's own rules (loopback always
// allowed; "public" denies the private, shared, link-local, metadata,
// unique-local, multicast and broadcast ranges, also as IPv4-mapped, NAT64
// and 6to4 spellings), then "allow", "deny" (a host name's rule once per
// address in policy.resolved; egress_name_unresolved when it has none) and, with "dns", port 53 to
// each of `nameservers` (addresses as text). Duplicates merged, deny first.
Result<std::vector<EgressRule>> BuildEgressTable(const EgressPolicy& policy,
                                                 const std::vector<std::string>& nameservers);

// The verdict of a table for one destination (the same rule the BPF
// program applies; used by unit tests and kept beside it on purpose).
bool EgressAllows(const std::vector<EgressRule>& table, const std::array<uint8_t, 16>& addr,
                  uint16_t port);

// "nameserver" lines of a resolv.conf.
std::vector<std::string> ParseNameservers(std::string_view resolv_conf);

// IPv4-mapped form of a.b.c.d.
std::array<uint8_t, 16> MappedV4(const uint8_t v4[4]);

}  // namespace agentd
