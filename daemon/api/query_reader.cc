#include "api/query_reader.h"

#include <algorithm>

namespace agentd {

const std::string* QueryReader::String(std::string_view name) {
  known_.emplace_back(name);
  for (const auto& [k, v] : query_) {
    if (k == name) return &v;
  }
  return nullptr;
}

const std::string* QueryReader::Required(std::string_view name) {
  const std::string* v = String(name);
  if (!v) Fail(name, "query parameter \"" + std::string(name) + "\" is required");
  return v;
}

bool QueryReader::Bool(std::string_view name, bool fallback) {
  const std::string* v = String(name);
  if (!v) return fallback;
  if (*v == "1" || *v == "true") return true;
  if (*v == "0" || *v == "false") return false;
  Fail(name, "query parameter \"" + std::string(name) + "\" must be 0 or 1");
  return fallback;
}

void QueryReader::Fail(std::string_view name, std::string message) {
  if (first_error_.ok()) {
    first_error_ = Status::InvalidRequest(std::move(message)).With("field", std::string(name));
  }
}

Status QueryReader::Finish() const {
  if (!first_error_.ok()) return first_error_;
  for (const auto& [k, v] : query_) {
    if (std::find(known_.begin(), known_.end(), k) == known_.end()) {
      return Status::InvalidRequest("unknown query parameter \"" + k + "\"").With("field", k);
    }
  }
  return Status::Ok();
}

}  // namespace agentd
