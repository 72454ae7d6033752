// The answers of GET /v1/fs/search (NDJSON lines) and GET /v1/fs/glob
// (docs/PROTOCOL.md, "Search" and "Glob").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "agentd/protocol/fs.h"
#include "agentd/protocol/json.h"
#include "agentd/protocol/status.h"

namespace agentd {

struct SearchMatch {
  std::string path;
  uint64_t line = 0;    // 1-based
  uint64_t column = 0;  // 1-based byte offset of the first match
  std::string text;
  bool cut = false;
  std::vector<uint64_t> invalid_utf8;  // byte offsets in the line
  std::vector<std::string> before;
  std::vector<std::string> after;
};

struct SearchSummary {
  uint64_t files_scanned = 0;
  uint64_t matches = 0;
  uint64_t binary_skipped = 0;
  uint64_t unreadable = 0;
  bool truncated = false;
  std::optional<std::string> bound;  // "results", "bytes" or "time"
  uint64_t elapsed_ms = 0;
};

// One line of the search stream: a match or the final summary.
using SearchLine = std::variant<SearchMatch, SearchSummary>;

json::Value EncodeSearchMatch(const SearchMatch& m);
json::Value EncodeSearchSummary(const SearchSummary& s);
Result<SearchLine> DecodeSearchLine(const json::Value& doc);

struct GlobResponse {
  std::vector<FileStat> entries;  // sorted by path (byte order)
  bool truncated = false;
  std::optional<std::string> bound;  // "results" or "time"
  uint64_t elapsed_ms = 0;
};

json::Value EncodeGlobResponse(const GlobResponse& g);
Result<GlobResponse> DecodeGlobResponse(const json::Value& doc);

}  // namespace agentd
