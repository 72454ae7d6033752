// Host names in egress rules ("pypi-mirror.internal:8080"; docs/PROTOCOL.md,
// "Egress"), resolved once when the exec starts with the libc resolver:
// static glibc 2.34+ carries its "files" and "dns" NSS modules inside, so
// /etc/hosts and the nameservers of /etc/resolv.conf answer without any
// shared library (docs/BUILDING.md, "Host names in egress rules").
#pragma once

#include <string>
#include <vector>

#include "agentd/protocol/egress.h"
#include "agentd/protocol/status.h"

namespace agentd {

// Bounds: distinct names per policy, addresses kept per name, and the
// time after which the names not yet asked are refused (each name is asked
// with a 1 s timeout and one attempt per nameserver).
inline constexpr size_t kMaxEgressNames = 8;
inline constexpr size_t kMaxEgressNameAddresses = 16;
inline constexpr int kEgressResolveBudgetMs = 5000;

// The distinct host names of the policy's "allow" and "deny" rules;
// invalid_request past kMaxEgressNames.
Result<std::vector<std::string>> EgressNames(const EgressPolicy& policy);

// Blocking (run it on the blocking pool): every name's IPv4 and IPv6
// addresses. egress_name_unresolved naming the first name without one.
Result<std::vector<EgressResolvedName>> ResolveEgressNames(const std::vector<std::string>& names);

}  // namespace agentd
