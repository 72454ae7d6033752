#include "limits/egress_names.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>

#include <algorithm>
#include <chrono>

#include "limits/egress_rules.h"

namespace agentd {
namespace {

Status Unresolved(const std::string& name, std::string why) {
  return Status::Error(ErrorCode::kEgressNameUnresolved,
                       "field \"egress\": host name \"" + name + "\" " + why)
      .With("field", std::string("egress"))
      .With("name", name)
      .With("reason", why);
}

}  // namespace

Result<std::vector<std::string>> EgressNames(const EgressPolicy& policy) {
  std::vector<std::string> names;
  for (const auto* rules : {&policy.allow, &policy.deny}) {
    for (const std::string& rule : *rules) {
      std::string name = EgressRuleName(rule);
      if (name.empty()) continue;
      AGENTD_RETURN_IF_ERROR(CheckNamedRulePort(rule));
      if (std::find(names.begin(), names.end(), name) != names.end()) continue;
      names.push_back(std::move(name));
    }
  }
  if (names.size() > kMaxEgressNames) {
    return Status::InvalidRequest("field \"egress\": the rules name " +
                                  std::to_string(names.size()) + " host names, at most " +
                                  std::to_string(kMaxEgressNames) + " are allowed")
        .With("field", std::string("egress"))
        .With("max_names", static_cast<int64_t>(kMaxEgressNames));
  }
  return names;
}

Result<std::vector<EgressResolvedName>> ResolveEgressNames(const std::vector<std::string>& names) {
  // The resolver state is per thread; changes after res_init() stay until
  // resolv.conf changes. glibc's defaults (5 s, 2 attempts per server)
  // would let one name hold a start for 30 s.
  ::res_init();
  _res.retrans = 1;
  _res.retry = 1;
  auto start = std::chrono::steady_clock::now();
  std::vector<EgressResolvedName> out;
  for (const std::string& name : names) {
    auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count();
    if (spent >= kEgressResolveBudgetMs) {
      return Unresolved(name, "was not asked: resolving the names before it took " +
                                  std::to_string(spent) + " ms, the budget is " +
                                  std::to_string(kEgressResolveBudgetMs) + " ms");
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;  // one entry per address
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(name.c_str(), nullptr, &hints, &res);
    if (rc != 0) return Unresolved(name, std::string("does not resolve: ") + ::gai_strerror(rc));
    EgressResolvedName n{name, {}};
    for (addrinfo* a = res; a && n.addresses.size() < kMaxEgressNameAddresses; a = a->ai_next) {
      char text[INET6_ADDRSTRLEN] = {};
      const void* addr = nullptr;
      if (a->ai_family == AF_INET) {
        addr = &reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr;
      } else if (a->ai_family == AF_INET6) {
        addr = &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr;
      }
      if (!addr || !::inet_ntop(a->ai_family, addr, text, sizeof text)) continue;
      if (std::find(n.addresses.begin(), n.addresses.end(), text) == n.addresses.end()) {
        n.addresses.emplace_back(text);
      }
    }
    ::freeaddrinfo(res);
    if (n.addresses.empty()) return Unresolved(name, "has no IPv4 or IPv6 address");
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace agentd
