// Egress policy and accounting (docs/PROTOCOL.md, "Egress"): the
// "egress" member of a start request and of the exec object, and the answer
// of GET /v1/execs/{id}/egress. Plain data, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/protocol/json.h"
#include "agentd/protocol/status.h"

namespace agentd {

// Bounds of the policy (the 400 names them).
inline constexpr size_t kMaxEgressRules = 64;       // each of "allow" and "deny"
inline constexpr size_t kMaxEgressRuleBytes = 128;  // one "CIDR:PORT" entry

// "public": every destination except private, shared, link-local,
// metadata, unique-local, multicast and broadcast ones; "allow": only the
// "allow" rules; "none": only loopback; "all": everything, still counted.
// Loopback stays reachable in every mode.
inline constexpr std::string_view kEgressModes[] = {"public", "allow", "none", "all"};

// A host name of the rules and the addresses it had when the exec
// started (the daemon resolves each name once; the rules hold these).
struct EgressResolvedName {
  std::string name;
  std::vector<std::string> addresses;  // "10.1.2.3", "2001:db8::1"
};

struct EgressPolicy {
  std::string mode;
  // "CIDR", "CIDR:PORT", "[v6CIDR]:PORT", "HOST", "HOST:PORT"
  std::vector<std::string> allow;
  std::vector<std::string> deny;
  bool dns = false;  // port 53 to the nameservers of /etc/resolv.conf
  // Answered by the daemon ("resolved" of the exec object), never sent.
  std::vector<EgressResolvedName> resolved;
};

// invalid_request naming the field "egress" for a wrong shape or a bound
// exceeded (the CIDR syntax is checked by the daemon). `answer`: the
// daemon's own encoding, whose "resolved" a request may not carry.
Result<EgressPolicy> DecodeEgressPolicy(const json::Value& v, bool answer = false);
json::Object EncodeEgressPolicy(const EgressPolicy& p);

// One accounted destination (or refused socket kind).
struct EgressDestination {
  std::string family;    // "ipv4" | "ipv6"
  std::string protocol;  // "tcp" | "udp" | "raw" | "icmp" | a number
  std::string address;   // "" for a refused socket (no destination yet)
  int64_t port = 0;
  std::string verdict;  // "allowed" | "refused"
  int64_t count = 0;
  std::string first_at;  // RFC 3339
  std::string last_at;
};

// Accounting that misses attempts: from when on (RFC 3339) and why (a
// daemon restart that could not reach the exec's counts, an exec no
// holder kept through it).
struct EgressIncomplete {
  std::string since;
  std::string why;
};

// GET /v1/execs/{id}/egress: every attempt of the exec and its descendants.
struct EgressReport {
  std::string id;
  bool accounting = false;  // false: the exec ran without an egress policy
  std::optional<EgressPolicy> policy;
  int64_t attempts = 0;  // allowed + refused, including the overflow
  int64_t allowed = 0;
  int64_t refused = 0;
  // Attempts to destinations past the table's bound (kept only as a count).
  int64_t overflow = 0;
  int64_t max_destinations = 0;
  std::vector<EgressDestination> destinations;
  // Destinations left out of this answer (a run's is bounded).
  int64_t destinations_omitted = 0;
  // Absent when every attempt is counted.
  std::optional<EgressIncomplete> incomplete;
};
json::Object EncodeEgressReport(const EgressReport& r);
// Adds `from`'s attempts to `into` (one entry per destination and verdict:
// counts summed, the earliest first_at, the latest last_at); entries past
// `max` count as overflow.
void MergeEgressReport(EgressReport& into, const EgressReport& from, size_t max);
// Keeps the `max` most telling destinations (refused first, then by
// count), counting the rest in destinations_omitted.
void BoundEgressReport(EgressReport& r, size_t max);
// "2 connections to 169.254.169.254:80 refused by policy public" for the
// most refused destination ("" when nothing was refused).
std::string EgressRefusalLine(const EgressReport& r);
Result<EgressReport> DecodeEgressReport(const json::Value& v);

}  // namespace agentd
