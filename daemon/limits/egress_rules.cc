#include "limits/egress_rules.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

namespace agentd {
namespace {

Status RuleError(std::string_view text, std::string why) {
  return Status::InvalidRequest("field \"egress\": rule \"" + std::string(text) + "\" " + why)
      .With("field", std::string("egress"))
      .With("rule", std::string(text));
}

void Mask(std::array<uint8_t, 16>& a, int prefix) {
  for (int i = 0; i < 16; ++i) {
    int keep = std::clamp(prefix - i * 8, 0, 8);
    a[i] &= static_cast<uint8_t>(keep == 0 ? 0 : (0xff << (8 - keep)) & 0xff);
  }
}

bool ParseInt(std::string_view s, int max, int* out) {
  if (s.empty() || s.size() > 5) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v > max) return false;
  *out = v;
  return true;
}

EgressRule V4Rule(uint8_t a, uint8_t b, uint8_t c, uint8_t d, int bits, bool allow) {
  uint8_t v4[4] = {a, b, c, d};
  EgressRule r;
  r.addr = MappedV4(v4);
  r.prefix = 96 + bits;
  r.allow = allow;
  Mask(r.addr, r.prefix);
  return r;
}

EgressRule V6Rule(const char* text, int bits, bool allow) {
  EgressRule r;
  ::inet_pton(AF_INET6, text, r.addr.data());
  r.prefix = bits;
  r.allow = allow;
  Mask(r.addr, r.prefix);
  return r;
}

// IPv4 ranges "public" refuses, with their prefix lengths.
struct V4Range {
  uint8_t a, b;
  int bits;
};
constexpr V4Range kPrivateV4[] = {
    {0, 0, 8},       // "this network"; 0.0.0.0 reaches the host itself
    {10, 0, 8},      // RFC 1918
    {100, 64, 10},   // RFC 6598 shared address space
    {169, 254, 16},  // link-local, with the metadata address 169.254.169.254
    {172, 16, 12},   // RFC 1918
    {192, 168, 16},  // RFC 1918
    {224, 0, 4},     // multicast
    {240, 0, 4},     // reserved, with the broadcast address 255.255.255.255
};

void AddPublicRules(std::vector<EgressRule>& t) {
  t.push_back(V6Rule("::", 0, true));  // everything else, IPv4 (mapped) and IPv6
  for (const V4Range& r : kPrivateV4) {
    EgressRule v4 = V4Rule(r.a, r.b, 0, 0, r.bits, false);
    t.push_back(v4);
    // The same range through NAT64 (64:ff9b::/96) and 6to4 (2002::/16).
    EgressRule nat64 = V6Rule("64:ff9b::", 96 + r.bits, false);
    std::copy(v4.addr.begin() + 12, v4.addr.end(), nat64.addr.begin() + 12);
    t.push_back(nat64);
    EgressRule six_to_four = V6Rule("2002::", 16 + r.bits, false);
    std::copy(v4.addr.begin() + 12, v4.addr.end(), six_to_four.addr.begin() + 2);
    Mask(six_to_four.addr, six_to_four.prefix);
    t.push_back(six_to_four);
  }
  t.push_back(V6Rule("::", 128, false));             // unspecified: the host itself
  t.push_back(V6Rule("fc00::", 7, false));           // unique local
  t.push_back(V6Rule("fd00:ec2::254", 128, false));  // AWS metadata (inside fc00::/7 too)
  t.push_back(V6Rule("fe80::", 10, false));          // link-local
  t.push_back(V6Rule("fec0::", 10, false));          // site-local (deprecated)
  t.push_back(V6Rule("ff00::", 8, false));           // multicast
}

}  // namespace

std::array<uint8_t, 16> MappedV4(const uint8_t v4[4]) {
  std::array<uint8_t, 16> a{};
  a[10] = 0xff;
  a[11] = 0xff;
  std::memcpy(a.data() + 12, v4, 4);
  return a;
}

namespace {

// "HOST[/BITS][:PORT]" or "[HOST[/BITS]]:PORT" into its host and port text.
Status SplitRule(std::string_view text, std::string_view* host, std::string_view* port_text) {
  *host = text;
  *port_text = {};
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return RuleError(text, "has '[' without ']'");
    *host = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return RuleError(text, "must be \"[ADDRESS/BITS]:PORT\"");
      *port_text = rest.substr(1);
      if (port_text->empty()) return RuleError(text, "has an empty port");
    }
  } else if (size_t colon = text.rfind(':');
             colon != std::string_view::npos && text.find(':') == colon) {
    // One colon: IPv4 or a host name with a port. More: a bare IPv6 address.
    *host = text.substr(0, colon);
    *port_text = text.substr(colon + 1);
    if (port_text->empty()) return RuleError(text, "has an empty port");
  }
  return Status::Ok();
}

// RFC 1123 host name letters, not all digits and dots (that is an address).
bool LooksLikeName(std::string_view host) {
  if (host.empty() || host.size() > 253 || host.front() == '-' || host.front() == '.') {
    return false;
  }
  bool letter = false;
  for (char c : host) {
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alpha && !(c >= '0' && c <= '9') && c != '-' && c != '.' && c != '_') return false;
    letter = letter || alpha || c == '-' || c == '_';
  }
  return letter;
}

}  // namespace

std::string EgressRuleName(std::string_view text) {
  std::string_view host, port_text;
  if (!SplitRule(text, &host, &port_text).ok() || text.front() == '[') return "";
  std::string z(host);
  uint8_t buf[16];
  if (::inet_pton(AF_INET, z.c_str(), buf) == 1 || ::inet_pton(AF_INET6, z.c_str(), buf) == 1) {
    return "";
  }
  return LooksLikeName(host) ? z : "";
}

namespace {

Status ParsePort(std::string_view text, std::string_view port_text, uint16_t* out) {
  int port = 0;
  if (!port_text.empty() && (!ParseInt(port_text, 65535, &port) || port == 0)) {
    return RuleError(text, "has a port that is not 1 to 65535");
  }
  *out = static_cast<uint16_t>(port);
  return Status::Ok();
}

}  // namespace

Status CheckNamedRulePort(std::string_view text) {
  std::string_view host, port_text;
  AGENTD_RETURN_IF_ERROR(SplitRule(text, &host, &port_text));
  uint16_t port = 0;
  return ParsePort(text, port_text, &port);
}

Result<EgressRule> ParseEgressRule(std::string_view text, bool allow) {
  std::string_view host, port_text;
  AGENTD_RETURN_IF_ERROR(SplitRule(text, &host, &port_text));
  EgressRule r;
  r.allow = allow;
  AGENTD_RETURN_IF_ERROR(ParsePort(text, port_text, &r.port));
  std::string_view addr = host;
  std::string_view bits_text;
  if (size_t slash = host.find('/'); slash != std::string_view::npos) {
    addr = host.substr(0, slash);
    bits_text = host.substr(slash + 1);
  }
  std::string addr_z(addr);
  uint8_t v4[4];
  int max_bits = 0;
  if (::inet_pton(AF_INET, addr_z.c_str(), v4) == 1) {
    r.addr = MappedV4(v4);
    max_bits = 32;
  } else if (::inet_pton(AF_INET6, addr_z.c_str(), r.addr.data()) == 1) {
    max_bits = 128;
  } else {
    return RuleError(text, "is not an IPv4 or IPv6 address or CIDR, or a host name with a port");
  }
  int bits = max_bits;
  if (host.find('/') != std::string_view::npos && !ParseInt(bits_text, max_bits, &bits)) {
    return RuleError(text, "has a prefix length that is not 0 to " + std::to_string(max_bits));
  }
  r.prefix = max_bits == 32 ? 96 + bits : bits;
  Mask(r.addr, r.prefix);
  return r;
}

namespace {

// The rules of one "allow" or "deny" entry: itself, or one per address
// its host name resolved to (EgressPolicy::resolved), with its port.
Status AddRules(const EgressPolicy& policy, const std::string& text, bool allow,
                std::vector<EgressRule>& t) {
  std::string name = EgressRuleName(text);
  if (name.empty()) {
    Result<EgressRule> r = ParseEgressRule(text, allow);
    if (!r.ok()) return r.status();
    t.push_back(*r);
    return Status::Ok();
  }
  auto found = std::find_if(policy.resolved.begin(), policy.resolved.end(),
                            [&](const EgressResolvedName& n) { return n.name == name; });
  if (found == policy.resolved.end() || found->addresses.empty()) {
    return Status::Error(ErrorCode::kEgressNameUnresolved,
                         "field \"egress\": host name \"" + name + "\" was not resolved")
        .With("field", std::string("egress"))
        .With("name", name);
  }
  std::string_view port = std::string_view(text).substr(name.size());  // "" or ":PORT"
  for (const std::string& a : found->addresses) {
    bool v6 = a.find(':') != std::string::npos;
    Result<EgressRule> r =
        ParseEgressRule(v6 ? "[" + a + "]" + std::string(port) : a + std::string(port), allow);
    if (!r.ok()) return r.status();
    t.push_back(*r);
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<EgressRule>> BuildEgressTable(const EgressPolicy& policy,
                                                 const std::vector<std::string>& nameservers) {
  std::vector<EgressRule> t;
  if (policy.mode == "public") AddPublicRules(t);
  if (policy.mode == "all") t.push_back(V6Rule("::", 0, true));
  t.push_back(V4Rule(127, 0, 0, 0, 8, true));  // loopback: servers the exec starts itself
  t.push_back(V6Rule("::1", 128, true));
  for (const std::string& s : policy.allow) AGENTD_RETURN_IF_ERROR(AddRules(policy, s, true, t));
  if (policy.dns) {
    for (const std::string& ns : nameservers) {
      Result<EgressRule> r = ParseEgressRule(ns, true);
      if (!r.ok()) continue;  // a scoped address (fe80::1%eth0) the kernel names otherwise
      r->port = 53;
      t.push_back(*r);
    }
  }
  for (const std::string& s : policy.deny) AGENTD_RETURN_IF_ERROR(AddRules(policy, s, false, t));
  // One entry per (address, prefix, port); deny wins over allow.
  std::vector<EgressRule> out;
  for (const EgressRule& r : t) {
    auto same = std::find_if(out.begin(), out.end(), [&](const EgressRule& o) {
      return o.addr == r.addr && o.prefix == r.prefix && o.port == r.port;
    });
    if (same == out.end()) {
      out.push_back(r);
    } else {
      same->allow = same->allow && r.allow;
    }
  }
  return out;
}

bool EgressAllows(const std::vector<EgressRule>& table, const std::array<uint8_t, 16>& addr,
                  uint16_t port) {
  const EgressRule* best = nullptr;
  for (const EgressRule& r : table) {
    if (r.port != 0 && r.port != port) continue;
    std::array<uint8_t, 16> masked = addr;
    Mask(masked, r.prefix);
    if (masked != r.addr) continue;
    if (!best || r.prefix > best->prefix || (r.prefix == best->prefix && r.port != 0)) best = &r;
  }
  return best && best->allow;
}

std::vector<std::string> ParseNameservers(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    constexpr std::string_view kKey = "nameserver";
    if (line.substr(0, kKey.size()) != kKey) continue;
    line.remove_prefix(kKey.size());
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string_view::npos || b == 0) continue;
    line.remove_prefix(b);
    size_t e = line.find_first_of(" \t\r#;");
    out.emplace_back(line.substr(0, e));
  }
  return out;
}

}  // namespace agentd
