// Request-target helpers: split path and query, percent-decode.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agentd/protocol/status.h"

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

// 400 invalid_request for a target that is not origin-form or has a
// malformed escape (in the query: naming the parameter as `field`).
Result<ParsedTarget> ParseTarget(std::string_view target);

}  // namespace agentd
