#include "mcp_jsonrpc.h"

#include "agentd/protocol/status.h"

namespace agentd::cli::mcp {
namespace {

Message Invalid(json::Value id, int code, std::string message) {
  Message m;
  m.id = std::move(id);
  m.error_code = code;
  m.error_message = std::move(message);
  return m;
}

// MCP ids are strings or integers, never null (a fraction is refused too,
// so an id round-trips exactly).
bool UsableId(const json::Value& id) { return id.is_string() || id.is_int(); }

}  // namespace

Message ReadMessage(std::string_view text) {
  Result<json::Value> doc = json::Parse(text);
  if (!doc.ok()) return Invalid(nullptr, kParseError, "parse error: " + doc.status().message());
  if (!doc->is_object()) {
    return Invalid(nullptr, kInvalidRequest,
                   doc->is_array() ? "batches are not supported: send one message at a time"
                                   : "a JSON-RPC message is an object");
  }
  const json::Value* id = doc->Find("id");
  json::Value usable_id = id && UsableId(*id) ? *id : json::Value();
  const json::Value* version = doc->Find("jsonrpc");
  if (!version || !version->is_string() || version->as_string() != "2.0")
    return Invalid(usable_id, kInvalidRequest, "\"jsonrpc\" must be \"2.0\"");
  const json::Value* method = doc->Find("method");
  if (!method) {
    // A response to a request of ours: we send none, so it is dropped.
    if (id && (doc->Find("result") || doc->Find("error"))) {
      Message m;
      m.kind = Message::Kind::kResponse;
      return m;
    }
    return Invalid(usable_id, kInvalidRequest, "a request needs \"method\"");
  }
  if (!method->is_string()) return Invalid(usable_id, kInvalidRequest, "\"method\" is a string");
  if (id && !UsableId(*id))
    return Invalid(nullptr, kInvalidRequest, "\"id\" is a string or an integer");
  Message m;
  m.kind = id ? Message::Kind::kRequest : Message::Kind::kNotification;
  m.id = usable_id;
  m.method = method->as_string();
  if (const json::Value* params = doc->Find("params")) {
    if (!params->is_object())
      return Invalid(usable_id, kInvalidParams, "\"params\" must be an object");
    m.params = params->as_object();
  }
  return m;
}

std::string ResultMessage(const json::Value& id, json::Value result) {
  json::Object o;
  o.Set("jsonrpc", "2.0").Set("id", id).Set("result", std::move(result));
  return json::Serialize(o);
}

std::string ErrorMessage(const json::Value& id, int code, std::string_view message,
                         std::optional<json::Value> data) {
  json::Object error;
  error.Set("code", code).Set("message", message);
  if (data) error.Set("data", std::move(*data));
  json::Object o;
  o.Set("jsonrpc", "2.0").Set("id", id).Set("error", std::move(error));
  return json::Serialize(o);
}

std::string NotificationMessage(std::string_view method, json::Object params) {
  json::Object o;
  o.Set("jsonrpc", "2.0").Set("method", method).Set("params", std::move(params));
  return json::Serialize(o);
}

}  // namespace agentd::cli::mcp
