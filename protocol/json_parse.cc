// The only file that includes simdjson: bytes in, json::Value out.
#include <simdjson.h>

#include <string>

#include "agentd/protocol/json.h"
#include "agentd/protocol/status.h"

namespace agentd::json {
namespace {

Value Convert(simdjson::dom::element e) {
  using simdjson::dom::element_type;
  switch (e.type()) {
    case element_type::ARRAY: {
      Array out;
      simdjson::dom::array array;
      if (e.get_array().get(array) == simdjson::SUCCESS) {
        for (simdjson::dom::element item : array) out.push_back(Convert(item));
      }
      return out;
    }
    case element_type::OBJECT: {
      Object out;
      simdjson::dom::object object;
      if (e.get_object().get(object) == simdjson::SUCCESS) {
        for (simdjson::dom::key_value_pair kv : object) {
          // A repeated key keeps its last value, as most JSON readers do.
          out.Set(std::string(kv.key), Convert(kv.value));
        }
      }
      return out;
    }
    case element_type::INT64:
      return Value(static_cast<long>(e.get_int64().value_unsafe()));
    case element_type::UINT64:
      return Value(static_cast<unsigned long>(e.get_uint64().value_unsafe()));
    case element_type::DOUBLE:
      return Value(e.get_double().value_unsafe());
    case element_type::STRING:
      return Value(std::string(e.get_string().value_unsafe()));
    case element_type::BOOL:
      return Value(e.get_bool().value_unsafe());
    case element_type::NULL_VALUE:
      return Value();
  }
  return Value();
}

}  // namespace

Result<Value> Parse(std::string_view text) {
  // One parser per thread: its buffers are reused across documents.
  thread_local simdjson::dom::parser parser(/*max_capacity=*/simdjson::SIMDJSON_MAXSIZE_BYTES);
  thread_local bool depth_set = [] {
    return parser.allocate(4096, kMaxJsonDepth) == simdjson::SUCCESS;
  }();
  (void)depth_set;
  simdjson::padded_string padded(text);
  simdjson::dom::element root;
  simdjson::error_code err = parser.parse(padded).get(root);
  if (err) {
    std::string reason = simdjson::error_message(err);
    if (err == simdjson::DEPTH_ERROR) {
      reason = "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels";
    }
    return Status::Error(ErrorCode::kInvalidJson, "request body is not valid JSON: " + reason)
        .With("reason", simdjson::error_message(err));
  }
  return Convert(root);
}

}  // namespace agentd::json
