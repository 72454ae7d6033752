#include "api/search_query.h"

#include <charconv>

namespace agentd {
namespace {

// Every value of a repeatable parameter (the caller marks it known with
// q.String, which sees only the first).
std::vector<std::string> AllValues(const QueryParams& all, std::string_view name) {
  std::vector<std::string> out;
  for (const auto& [k, v] : all) {
    if (k == name) out.push_back(v);
  }
  return out;
}

// An integer in [min, max], or `fallback` when absent.
// `v` (the value of `name`, or nullptr) as an integer in [min, max];
// `fallback` when absent.
uint64_t CountParam(const std::string* v, std::string_view name, uint64_t fallback, uint64_t min,
                    uint64_t max, Status* error) {
  if (!v) return fallback;
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || end != v->data() + v->size() || n < min || n > max) {
    if (error->ok()) {
      *error = Status::InvalidRequest("query parameter \"" + std::string(name) +
                                      "\" must be an integer from " + std::to_string(min) + " to " +
                                      std::to_string(max))
                   .With("field", std::string(name))
                   .With("min", min)
                   .With("max", max);
    }
    return fallback;
  }
  return n;
}

}  // namespace

void ReadWalkQuery(QueryReader& q, const QueryParams& all, WalkOptions* walk, uint64_t* max_results,
                   std::chrono::milliseconds* timeout, Status* error) {
  walk->hidden = q.Bool("hidden", false);
  walk->gitignore = q.Bool("gitignore", true);
  walk->follow = q.Bool("follow", false);
  q.String("exclude");
  walk->exclude = AllValues(all, "exclude");
  *max_results = CountParam(q.String("max_results"), "max_results", *max_results, 1,
                            kSearchMaxResultsLimit, error);
  *timeout = std::chrono::milliseconds(CountParam(q.String("timeout_ms"), "timeout_ms",
                                                  static_cast<uint64_t>(timeout->count()), 1,
                                                  kSearchMaxTimeoutMs, error));
}

SearchQuery ReadSearchQuery(QueryReader& q, const QueryParams& all) {
  SearchQuery sq;
  sq.path = q.Required("path");
  sq.pattern = q.Required("pattern");
  sq.fixed = q.Bool("fixed", false);
  sq.ignore_case = q.Bool("ignore_case", false);
  SearchOptions& o = sq.options;
  ReadWalkQuery(q, all, &o.walk, &o.max_results, &o.timeout, &sq.error);
  q.String("glob");
  o.include = AllValues(all, "glob");
  o.context = CountParam(q.String("context"), "context", 0, 0, kSearchMaxContext, &sq.error);
  o.max_line_bytes = CountParam(q.String("max_bytes_per_line"), "max_bytes_per_line",
                                o.max_line_bytes, 1, kSearchMaxLineBytesLimit, &sq.error);
  o.max_bytes = CountParam(q.String("max_bytes"), "max_bytes", o.max_bytes, 1, kSearchMaxBytesLimit,
                           &sq.error);
  return sq;
}

}  // namespace agentd
