// Search and glob options of the client library (docs/PROTOCOL.md,
// "Search" and "Glob"). The answers (SearchMatch, SearchSummary,
// GlobResponse) come from agentd/protocol/search.h.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agentd/protocol/search.h"

namespace agentd::client {

// What search and glob share; absent values take the daemon's defaults.
struct WalkQuery {
  std::vector<std::string> exclude;  // "Pattern rules"
  bool hidden = false;
  bool gitignore = true;
  bool follow = false;
  std::optional<uint64_t> max_results;
  std::optional<uint64_t> timeout_ms;
};

struct SearchOptions {
  bool fixed = false;
  bool ignore_case = false;
  std::vector<std::string> glob;  // include filters
  uint64_t context = 0;
  std::optional<uint64_t> max_bytes;
  std::optional<uint64_t> max_bytes_per_line;
  WalkQuery walk;
  // Sees each match as it arrives; a non-ok Status stops the search.
  std::function<Status(const SearchMatch&)> on_match;
};

struct SearchResult {
  std::vector<SearchMatch> matches;
  SearchSummary summary;
};

}  // namespace agentd::client
