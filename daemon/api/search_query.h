// The query of GET /v1/fs/search and GET /v1/fs/glob (docs/PROTOCOL.md,
// "Search" and "Glob"), read through a QueryReader so unknown parameters
// are refused. Numbers are checked against their ranges here.
#pragma once

#include <optional>
#include <string>

#include "api/query_reader.h"
#include "search/tree_search.h"

namespace agentd {

// Ranges of the bounds a client may set.
inline constexpr uint64_t kSearchMaxResultsLimit = 100000;
inline constexpr uint64_t kSearchMaxBytesLimit = 1ull << 30;
inline constexpr uint64_t kSearchMaxLineBytesLimit = 1 << 20;
inline constexpr uint64_t kSearchMaxContext = 100;
inline constexpr uint64_t kSearchMaxTimeoutMs = 600000;

struct SearchQuery {
  const std::string* path = nullptr;
  const std::string* pattern = nullptr;
  bool fixed = false;
  bool ignore_case = false;
  SearchOptions options;
  Status error;  // the first bad value, beyond what the QueryReader saw
};

// Every parameter of the search route. `all` is the raw query, for the
// repeatable parameters (glob, exclude).
SearchQuery ReadSearchQuery(QueryReader& q, const QueryParams& all);

// The parameters search and glob share: hidden, gitignore, follow,
// exclude, max_results, timeout_ms. Records a bad value in `*error`.
void ReadWalkQuery(QueryReader& q, const QueryParams& all, WalkOptions* walk, uint64_t* max_results,
                   std::chrono::milliseconds* timeout, Status* error);

}  // namespace agentd
