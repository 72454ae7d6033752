// Request-target helpers: split path and query, percent-decode.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentd {

using QueryParams = std::vector<std::pair<std::string, std::string>>;

// Decodes %XX escapes (and '+' as space when `plus_is_space`). nullopt for a
// malformed escape.
std::optional<std::string> PercentDecode(std::string_view in, bool plus_is_space);

// Percent-encodes everything but unreserved characters (and '/' when
// `keep_slash`), for building targets.
std::string PercentEncode(std::string_view in, bool keep_slash);

struct ParsedTarget {
  std::string path;   // decoded
  QueryParams query;  // decoded, in order
};

// nullopt for a target that is not origin-form or has a malformed escape.
std::optional<ParsedTarget> ParseTarget(std::string_view target);

}  // namespace agentd
