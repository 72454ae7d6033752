#include "server/url.h"

#include "agentd/protocol/percent.h"

namespace agentd {

Result<ParsedTarget> ParseTarget(std::string_view target) {
  if (target.empty() || target.front() != '/') {
    return Status::InvalidRequest("the request target must be a path starting with \"/\"");
  }
  ParsedTarget out;
  size_t q = target.find('?');
  std::string_view raw_path = target.substr(0, q);
  if (size_t hash = raw_path.find('#'); hash != std::string_view::npos) {
    raw_path = raw_path.substr(0, hash);
  }
  auto path = PercentDecode(raw_path, false);
  if (!path) return Status::InvalidRequest("malformed percent-escape in the request path");
  out.path = std::move(*path);
  if (q == std::string_view::npos) return out;
  std::string_view query = target.substr(q + 1);
  if (size_t hash = query.find('#'); hash != std::string_view::npos) query = query.substr(0, hash);
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    auto key = PercentDecode(pair.substr(0, eq), true);
    auto value = PercentDecode(eq == std::string_view::npos ? "" : pair.substr(eq + 1), true);
    if (!key || !value) {
      std::string name = key ? *key : std::string(pair.substr(0, eq));
      return Status::InvalidRequest("malformed percent-escape in query parameter \"" + name + "\"")
          .With("field", name);
    }
    out.query.emplace_back(std::move(*key), std::move(*value));
  }
  return out;
}

}  // namespace agentd
