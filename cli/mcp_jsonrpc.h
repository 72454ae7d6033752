// JSON-RPC 2.0 as MCP uses it (one message per line on stdio, one per POST
// over Streamable HTTP): classifying an incoming message and building
// answers. Pure functions, no I/O; the JSON comes from json::Parse
// (simdjson) and goes out through json::Serialize.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "agentd/protocol/json.h"

namespace agentd::cli::mcp {

// The JSON-RPC error codes MCP answers with.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;

struct Message {
  enum class Kind { kRequest, kNotification, kResponse, kInvalid };
  Kind kind = Kind::kInvalid;
  json::Value id;  // null for notifications and unusable ids
  std::string method;
  json::Object params;  // absent params read as {}
  // kInvalid: the error to answer (with `id` when it was readable).
  int error_code = 0;
  std::string error_message;
};

// Classifies one message's text: parse errors and malformed requests come
// back as kInvalid with the code to answer.
Message ReadMessage(std::string_view text);

// {"jsonrpc":"2.0","id":..,"result":..}
std::string ResultMessage(const json::Value& id, json::Value result);
// {"jsonrpc":"2.0","id":..,"error":{"code","message"[,"data"]}}
std::string ErrorMessage(const json::Value& id, int code, std::string_view message,
                         std::optional<json::Value> data = std::nullopt);
// {"jsonrpc":"2.0","method":..,"params":..}
std::string NotificationMessage(std::string_view method, json::Object params);

}  // namespace agentd::cli::mcp
