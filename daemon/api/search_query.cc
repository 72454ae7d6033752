#include "api/search_query.h"

namespace agentd {

void ReadWalkQuery(QueryReader& q, WalkOptions* walk, uint64_t* max_results,
                   std::chrono::milliseconds* timeout) {
  walk->hidden = q.Bool("hidden", false);
  walk->gitignore = q.Bool("gitignore", true);
  walk->follow = q.Bool("follow", false);
  walk->exclude = q.Repeated("exclude");
  *max_results = q.Number("max_results", 1, kSearchMaxResultsLimit).value_or(*max_results);
  if (auto ms = q.Number("timeout_ms", 1, kSearchMaxTimeoutMs)) {
    *timeout = std::chrono::milliseconds(*ms);
  }
}

SearchQuery ReadSearchQuery(QueryReader& q) {
  SearchQuery sq;
  sq.path = q.Required("path");
  sq.pattern = q.Required("pattern");
  sq.fixed = q.Bool("fixed", false);
  sq.ignore_case = q.Bool("ignore_case", false);
  SearchOptions& o = sq.options;
  ReadWalkQuery(q, &o.walk, &o.max_results, &o.timeout);
  o.include = q.Repeated("glob");
  o.context = q.Number("context", 0, kSearchMaxContext).value_or(0);
  o.max_line_bytes =
      q.Number("max_bytes_per_line", 1, kSearchMaxLineBytesLimit).value_or(o.max_line_bytes);
  o.max_bytes = q.Number("max_bytes", 1, kSearchMaxBytesLimit).value_or(o.max_bytes);
  return sq;
}

}  // namespace agentd
