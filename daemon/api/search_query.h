// The query of GET /v1/fs/search and GET /v1/fs/glob (docs/PROTOCOL.md,
// "Search" and "Glob"), read through a QueryReader so unknown parameters
// are refused and numbers checked against their ranges.
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
};

// Every parameter of the search route; problems are the reader's
// (Finish() reports the first).
SearchQuery ReadSearchQuery(QueryReader& q);

// The parameters search and glob share: hidden, gitignore, follow,
// exclude (repeatable), max_results, timeout_ms.
void ReadWalkQuery(QueryReader& q, WalkOptions* walk, uint64_t* max_results,
                   std::chrono::milliseconds* timeout);

}  // namespace agentd
