#include "agentd/protocol/object_reader.h"

#include <algorithm>

namespace agentd {

ObjectReader::ObjectReader(const json::Value& doc) : doc_(doc) {
  if (!doc.is_object()) {
    first_error_ = Status::InvalidRequest("request body must be a JSON object");
  }
}

const json::Value* ObjectReader::Lookup(std::string_view key) {
  known_.emplace_back(key);
  const json::Value* v = doc_.Find(key);
  return (v && !v->is_null()) ? v : nullptr;
}

void ObjectReader::Fail(std::string_view key, std::string message) {
  if (first_error_.ok()) {
    first_error_ = Status::InvalidRequest(std::move(message)).With("field", std::string(key));
  }
}

void ObjectReader::TypeError(std::string_view key, std::string_view expected) {
  Fail(key, "field \"" + std::string(key) + "\" must be " + std::string(expected));
}

std::optional<std::string> ObjectReader::String(std::string_view key) {
  const json::Value* v = Lookup(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    TypeError(key, "a string");
    return std::nullopt;
  }
  return v->as_string();
}

std::optional<int64_t> ObjectReader::Int(std::string_view key, int64_t min, int64_t max) {
  const json::Value* v = Lookup(key);
  if (!v) return std::nullopt;
  if (!v->is_int() || v->as_int() < min || v->as_int() > max) {
    TypeError(key, "an integer from " + std::to_string(min) + " to " + std::to_string(max));
    if (first_error_.details().Find("min") == nullptr) {
      first_error_.With("min", min).With("max", max);
    }
    return std::nullopt;
  }
  return v->as_int();
}

std::optional<bool> ObjectReader::Bool(std::string_view key) {
  const json::Value* v = Lookup(key);
  if (!v) return std::nullopt;
  if (!v->is_bool()) {
    TypeError(key, "true or false");
    return std::nullopt;
  }
  return v->as_bool();
}

std::optional<double> ObjectReader::Number(std::string_view key, double min, double max) {
  const json::Value* v = Lookup(key);
  if (!v) return std::nullopt;
  if (!v->is_number() || !(v->as_double() >= min) || !(v->as_double() <= max)) {
    TypeError(key, "a number from " + json::Serialize(json::Value(min)) + " to " +
                       json::Serialize(json::Value(max)));
    if (first_error_.details().Find("min") == nullptr) {
      first_error_.With("min", min).With("max", max);
    }
    return std::nullopt;
  }
  return v->as_double();
}

std::optional<std::vector<std::string>> ObjectReader::StringArray(std::string_view key) {
  const json::Value* v = Lookup(key);
  if (!v) return std::nullopt;
  if (!v->is_array()) {
    TypeError(key, "an array of strings");
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (const json::Value& item : v->as_array()) {
    if (!item.is_string()) {
      TypeError(key, "an array of strings");
      return std::nullopt;
    }
    out.push_back(item.as_string());
  }
  return out;
}

std::optional<EnvOverlay> ObjectReader::StringMap(std::string_view key, bool allow_null) {
  const json::Value* v = Lookup(key);
  if (!v) return std::nullopt;
  std::string_view expected = allow_null ? "an object of strings or nulls" : "an object of strings";
  if (!v->is_object()) {
    TypeError(key, expected);
    return std::nullopt;
  }
  EnvOverlay out;
  for (const json::Member& m : v->as_object().members()) {
    if (m.value.is_string()) {
      out.emplace_back(m.key, m.value.as_string());
    } else if (allow_null && m.value.is_null()) {
      out.emplace_back(m.key, std::nullopt);
    } else {
      TypeError(key, expected);
      return std::nullopt;
    }
  }
  return out;
}

const json::Value* ObjectReader::Raw(std::string_view key) { return Lookup(key); }

void ObjectReader::Require(std::string_view key, bool present) {
  if (!present) Fail(key, "field \"" + std::string(key) + "\" is required");
}

Status ObjectReader::Finish() {
  if (!first_error_.ok()) return first_error_;
  for (const json::Member& m : doc_.as_object().members()) {
    if (std::find(known_.begin(), known_.end(), m.key) == known_.end()) {
      return Status::InvalidRequest("unknown field \"" + m.key + "\"").With("field", m.key);
    }
  }
  return Status::Ok();
}

}  // namespace agentd
