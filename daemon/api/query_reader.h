// QueryReader: typed access to a request's query parameters, strict like
// ObjectReader for JSON bodies: each getter marks its name as known, and
// Finish() reports the first problem or any parameter nobody asked for
// (400 invalid_request naming the `field`), so a misspelled option is
// never silently ignored. Used on the io thread.
#pragma once

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

  // The first value of `name`, or nullptr.
  const std::string* String(std::string_view name);
  // Like String, but records a failure when absent.
  const std::string* Required(std::string_view name);
  // "1"/"true" or "0"/"false"; absent: `fallback`.
  bool Bool(std::string_view name, bool fallback);

  Status Finish() const;

 private:
  void Fail(std::string_view name, std::string message);

  const QueryParams& query_;
  std::vector<std::string> known_;
  Status first_error_;
};

}  // namespace agentd
