// Request targets: the decoded path and the ordered, decoded query
// (percent-decoding is agentd/protocol/percent.h, shared with the client).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agentd/protocol/status.h"

namespace agentd {

using QueryParams = std::vector<std::pair<std::string, std::string>>;

struct ParsedTarget {
  std::string path;   // decoded
  QueryParams query;  // decoded, in order
};

// 400 invalid_request for a target that is not origin-form or has a
// malformed escape (in the query: naming the parameter as `field`).
Result<ParsedTarget> ParseTarget(std::string_view target);

}  // namespace agentd
