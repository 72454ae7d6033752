// Egress policy and accounting vocabulary (docs/PROTOCOL.md, "Egress").
#include "agentd/protocol/egress.h"

#include <algorithm>

#include "agentd/protocol/object_reader.h"

namespace agentd {
namespace {

Status EgressError(std::string message) {
  return Status::InvalidRequest("field \"egress\": " + std::move(message))
      .With("field", std::string("egress"));
}

Status CheckRules(const std::vector<std::string>& rules, std::string_view key) {
  if (rules.size() > kMaxEgressRules) {
    return EgressError("\"" + std::string(key) + "\" has " + std::to_string(rules.size()) +
                       " entries, at most " + std::to_string(kMaxEgressRules) + " are allowed")
        .With("max_entries", static_cast<int64_t>(kMaxEgressRules));
  }
  for (const std::string& rule : rules) {
    if (rule.empty() || rule.size() > kMaxEgressRuleBytes) {
      return EgressError("each \"" + std::string(key) + "\" entry is 1 to " +
                         std::to_string(kMaxEgressRuleBytes) + " bytes, one has " +
                         std::to_string(rule.size()))
          .With("max_bytes", static_cast<int64_t>(kMaxEgressRuleBytes));
    }
  }
  return Status::Ok();
}

json::Array Strings(const std::vector<std::string>& v) {
  json::Array a;
  for (const std::string& s : v) a.emplace_back(s);
  return a;
}

std::string Text(const json::Value& doc, std::string_view key) {
  const json::Value* x = doc.Find(key);
  return x && x->is_string() ? x->as_string() : std::string();
}

int64_t Int(const json::Value& doc, std::string_view key) {
  const json::Value* x = doc.Find(key);
  return x && x->is_int() ? x->as_int() : 0;
}

}  // namespace

Result<EgressPolicy> DecodeEgressPolicy(const json::Value& v, bool answer) {
  if (!v.is_object()) return EgressError("must be an object");
  ObjectReader r(v);
  EgressPolicy p;
  std::optional<std::string> mode = r.String("mode");
  std::optional<std::vector<std::string>> allow = r.StringArray("allow");
  std::optional<std::vector<std::string>> deny = r.StringArray("deny");
  p.dns = r.Bool("dns").value_or(false);
  const json::Value* resolved = r.Raw("resolved");
  r.Require("mode", mode.has_value());
  Status s = r.Finish();
  if (!s.ok()) return EgressError(s.message());
  if (resolved && !answer) {
    return EgressError("\"resolved\" is answered by the daemon, not sent");
  }
  if (resolved && resolved->is_object()) {
    for (const json::Member& m : resolved->as_object().members()) {
      EgressResolvedName n{m.key, {}};
      if (m.value.is_array()) {
        for (const json::Value& a : m.value.as_array()) {
          if (a.is_string()) n.addresses.push_back(a.as_string());
        }
      }
      p.resolved.push_back(std::move(n));
    }
  }
  bool known = false;
  for (std::string_view m : kEgressModes) known = known || *mode == m;
  if (!known) return EgressError("\"mode\" must be \"public\", \"allow\", \"none\" or \"all\"");
  p.mode = std::move(*mode);
  if (allow) p.allow = std::move(*allow);
  if (deny) p.deny = std::move(*deny);
  AGENTD_RETURN_IF_ERROR(CheckRules(p.allow, "allow"));
  AGENTD_RETURN_IF_ERROR(CheckRules(p.deny, "deny"));
  return p;
}

json::Object EncodeEgressPolicy(const EgressPolicy& p) {
  json::Object o;
  o.Set("mode", p.mode);
  o.Set("allow", Strings(p.allow));
  o.Set("deny", Strings(p.deny));
  o.Set("dns", p.dns);
  if (!p.resolved.empty()) {
    json::Object names;
    for (const EgressResolvedName& n : p.resolved) names.Set(n.name, Strings(n.addresses));
    o.Set("resolved", std::move(names));
  }
  return o;
}

json::Object EncodeEgressReport(const EgressReport& r) {
  json::Object o;
  o.Set("id", r.id);
  o.Set("accounting", r.accounting);
  if (r.policy) o.Set("policy", EncodeEgressPolicy(*r.policy));
  o.Set("attempts", r.attempts);
  o.Set("allowed", r.allowed);
  o.Set("refused", r.refused);
  o.Set("overflow", r.overflow);
  o.Set("max_destinations", r.max_destinations);
  json::Array dests;
  for (const EgressDestination& d : r.destinations) {
    json::Object x;
    x.Set("family", d.family);
    x.Set("protocol", d.protocol);
    x.Set("address", d.address);
    x.Set("port", d.port);
    x.Set("verdict", d.verdict);
    x.Set("count", d.count);
    x.Set("first_at", d.first_at);
    x.Set("last_at", d.last_at);
    dests.emplace_back(std::move(x));
  }
  o.Set("destinations", std::move(dests));
  o.Set("destinations_omitted", r.destinations_omitted);
  if (r.incomplete) {
    o.Set("incomplete",
          json::Object().Set("since", r.incomplete->since).Set("why", r.incomplete->why));
  }
  return o;
}

void MergeEgressReport(EgressReport& into, const EgressReport& from, size_t max) {
  for (const EgressDestination& d : from.destinations) {
    EgressDestination* same = nullptr;
    for (EgressDestination& x : into.destinations) {
      if (x.port == d.port && x.address == d.address && x.protocol == d.protocol &&
          x.verdict == d.verdict && x.family == d.family) {
        same = &x;
        break;
      }
    }
    if (!same && into.destinations.size() >= max) {
      into.overflow += d.count;
      continue;
    }
    if (same) {
      same->count += d.count;
      same->first_at = std::min(same->first_at, d.first_at);  // RFC 3339, one format
      same->last_at = std::max(same->last_at, d.last_at);
    } else {
      into.destinations.push_back(d);
    }
    (d.verdict == "allowed" ? into.allowed : into.refused) += d.count;
  }
  into.overflow += from.overflow;
  into.attempts = into.allowed + into.refused + into.overflow;
}

void BoundEgressReport(EgressReport& r, size_t max) {
  // A selection of at most `max` (16) from at most 1024: a few thousand
  // comparisons, and none of std::stable_sort's code for a struct of strings.
  auto before = [](const EgressDestination& a, const EgressDestination& b) {
    if (a.verdict != b.verdict) return a.verdict == "refused";
    return a.count > b.count;
  };
  std::vector<EgressDestination>& all = r.destinations;
  std::vector<bool> taken(all.size(), false);
  std::vector<EgressDestination> kept;
  while (kept.size() < max && kept.size() < all.size()) {
    size_t best = all.size();
    for (size_t i = 0; i < all.size(); ++i) {
      if (!taken[i] && (best == all.size() || before(all[i], all[best]))) best = i;
    }
    taken[best] = true;
    kept.push_back(std::move(all[best]));
  }
  r.destinations_omitted += static_cast<int64_t>(all.size() - kept.size());
  all = std::move(kept);
}

std::string EgressRefusalLine(const EgressReport& r) {
  const EgressDestination* top = nullptr;
  for (const EgressDestination& d : r.destinations) {
    if (d.verdict == "refused" && (!top || d.count > top->count)) top = &d;
  }
  if (!top) return "";
  std::string n = std::to_string(top->count);
  bool one = top->count == 1;
  std::string what;
  if (top->address.empty()) {
    what = n + " " + top->protocol + (one ? " socket" : " sockets");
  } else {
    std::string dest = top->family == "ipv6" ? "[" + top->address + "]" : top->address;
    dest += ":" + std::to_string(top->port);
    std::string kind = top->protocol == "udp" ? (one ? " datagram" : " datagrams")
                                              : (one ? " connection" : " connections");
    what = n + kind + " to " + dest;
  }
  std::string line = what + " refused by policy " + (r.policy ? r.policy->mode : std::string("?"));
  int64_t others = r.refused - top->count;
  if (others > 0) line += " (" + std::to_string(others) + " more refused)";
  return line;
}

Result<EgressReport> DecodeEgressReport(const json::Value& v) {
  if (!v.is_object()) return Status::InvalidRequest("an egress report must be an object");
  EgressReport r;
  r.id = Text(v, "id");
  if (const json::Value* x = v.Find("accounting"); x && x->is_bool()) r.accounting = x->as_bool();
  if (const json::Value* x = v.Find("policy"); x && x->is_object()) {
    Result<EgressPolicy> p = DecodeEgressPolicy(*x, /*answer=*/true);
    if (p.ok()) r.policy = std::move(*p);
  }
  r.attempts = Int(v, "attempts");
  r.allowed = Int(v, "allowed");
  r.refused = Int(v, "refused");
  r.overflow = Int(v, "overflow");
  r.max_destinations = Int(v, "max_destinations");
  r.destinations_omitted = Int(v, "destinations_omitted");
  if (const json::Value* a = v.Find("destinations"); a && a->is_array()) {
    for (const json::Value& x : a->as_array()) {
      EgressDestination d;
      d.family = Text(x, "family");
      d.protocol = Text(x, "protocol");
      d.address = Text(x, "address");
      d.port = Int(x, "port");
      d.verdict = Text(x, "verdict");
      d.count = Int(x, "count");
      d.first_at = Text(x, "first_at");
      d.last_at = Text(x, "last_at");
      r.destinations.push_back(std::move(d));
    }
  }
  if (const json::Value* x = v.Find("incomplete"); x && x->is_object()) {
    r.incomplete = EgressIncomplete{Text(*x, "since"), Text(*x, "why")};
  }
  return r;
}

}  // namespace agentd
