#include "api/query_reader.h"

#include <algorithm>
#include <charconv>

namespace agentd {

const std::string* QueryReader::String(std::string_view name) {
  known_.emplace_back(name);
  const std::string* found = nullptr;
  for (const auto& [k, v] : query_) {
    if (k != name) continue;
    if (found) {
      Fail(name, "query parameter \"" + std::string(name) + "\" is given more than once");
      return nullptr;
    }
    found = &v;
  }
  return found;
}

std::vector<std::string> QueryReader::Repeated(std::string_view name) {
  known_.emplace_back(name);
  std::vector<std::string> out;
  for (const auto& [k, v] : query_) {
    if (k == name) out.push_back(v);
  }
  return out;
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

std::optional<uint64_t> QueryReader::Number(std::string_view name, uint64_t min, uint64_t max) {
  const std::string* text = String(name);
  if (!text) return std::nullopt;
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
  if (!text->empty() && ec == std::errc() && end == text->data() + text->size() && n >= min &&
      n <= max) {
    return n;
  }
  Fail(Status::InvalidRequest("query parameter \"" + std::string(name) +
                              "\" must be an integer from " + std::to_string(min) + " to " +
                              std::to_string(max))
           .With("field", std::string(name))
           .With("min", min)
           .With("max", max));
  return std::nullopt;
}

std::optional<std::string> QueryReader::Choice(std::string_view name,
                                               std::initializer_list<std::string_view> choices) {
  const std::string* text = String(name);
  if (!text) return std::nullopt;
  std::string listed;
  for (std::string_view choice : choices) {
    if (*text == choice) return *text;
    listed += (listed.empty() ? "" : ", ") + std::string(choice);
  }
  Fail(name, "query parameter \"" + std::string(name) + "\" must be one of " + listed);
  return std::nullopt;
}

void QueryReader::Fail(Status problem) {
  if (first_error_.ok()) first_error_ = std::move(problem);
}

void QueryReader::Fail(std::string_view name, std::string message) {
  Fail(Status::InvalidRequest(std::move(message)).With("field", std::string(name)));
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
