// QueryReader: the one way a route reads its query parameters, strict like
// ObjectReader for JSON bodies. Each getter marks its name as known and
// records the first problem with its value; Finish() reports that problem,
// a parameter given more than once, or any parameter nobody asked for
// (400 invalid_request naming the `field`), so a misspelled option
// (`wait=` for `wait_ms=`) is never silently ignored. A route without
// query parameters still calls Finish() on a reader it asked nothing.
// Used on the io thread; borrows the parameters it is given.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/protocol/status.h"
#include "server/url.h"

namespace agentd {

class QueryReader {
 public:
  explicit QueryReader(const QueryParams& query) : query_(query) {}

  // The value of `name`, or nullptr.
  const std::string* String(std::string_view name);
  // Like String, but records a failure when absent.
  const std::string* Required(std::string_view name);
  // "1"/"true" or "0"/"false"; absent: `fallback`.
  bool Bool(std::string_view name, bool fallback);
  // An unsigned decimal integer in [min, max]; nullopt when absent (or
  // refused, with `min` and `max` in the details).
  std::optional<uint64_t> Number(std::string_view name, uint64_t min, uint64_t max);
  // Every value of a parameter that may be given more than once (search's
  // `glob` and `exclude`), in order; empty when absent.
  std::vector<std::string> Repeated(std::string_view name);
  // One of `choices`; nullopt when absent (or refused, naming the choices).
  std::optional<std::string> Choice(std::string_view name,
                                    std::initializer_list<std::string_view> choices);

  // Records a problem found by the caller (the first one wins).
  void Fail(Status problem);

  // The first problem, in the order the getters were called; then a
  // parameter no getter asked for.
  Status Finish() const;

 private:
  void Fail(std::string_view name, std::string message);

  const QueryParams& query_;
  std::vector<std::string> known_;
  Status first_error_;
};

}  // namespace agentd
