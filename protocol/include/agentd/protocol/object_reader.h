// ObjectReader: typed, validated access to the members of a JSON request.
//
// Each getter marks its key as known and returns the value when present and
// well-typed. The first problem (wrong type, out of range, missing required
// member) is remembered; Finish() reports it, or else any member no getter
// asked for: unknown fields are refused (invalid_request naming the field),
// so a misspelled "timeout" can never be silently ignored. A JSON null is
// treated as an absent member.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agentd/protocol/json.h"
#include "agentd/protocol/status.h"

namespace agentd {

// Ordered string map that can say "unset" (a JSON null value), as env does.
using EnvOverlay = std::vector<std::pair<std::string, std::optional<std::string>>>;

class ObjectReader {
 public:
  // `doc` must outlive the reader. A non-object document fails Finish().
  explicit ObjectReader(const json::Value& doc);

  std::optional<std::string> String(std::string_view key);
  std::optional<int64_t> Int(std::string_view key, int64_t min, int64_t max);
  std::optional<bool> Bool(std::string_view key);
  // Any JSON number (integer or fraction) in [min, max].
  std::optional<double> Number(std::string_view key, double min, double max);
  std::optional<std::vector<std::string>> StringArray(std::string_view key);
  // An object of strings (or nulls when `allow_null`).
  std::optional<EnvOverlay> StringMap(std::string_view key, bool allow_null);
  // The raw member (for nested objects decoded elsewhere).
  const json::Value* Raw(std::string_view key);

  // Records a failure for a missing required member.
  void Require(std::string_view key, bool present);
  // Records a caller-detected problem with a member.
  void Fail(std::string_view key, std::string message);

  Status Finish();

 private:
  const json::Value* Lookup(std::string_view key);
  void TypeError(std::string_view key, std::string_view expected);

  const json::Value& doc_;
  std::vector<std::string> known_;
  Status first_error_;
};

}  // namespace agentd
