#include "mcp_schema.h"

#include <cmath>

namespace agentd::cli::mcp {
namespace {

std::string TypeName(const json::Value& v) {
  switch (v.type()) {
    case json::Value::Type::kNull:
      return "null";
    case json::Value::Type::kBool:
      return "a boolean";
    case json::Value::Type::kInt:
      return "an integer";
    case json::Value::Type::kDouble:
      return "a number";
    case json::Value::Type::kString:
      return "a string";
    case json::Value::Type::kArray:
      return "an array";
    case json::Value::Type::kObject:
      return "an object";
  }
  return "a value";
}

bool IsWholeNumber(const json::Value& v) {
  if (v.is_int()) return true;
  if (!v.is_number()) return false;
  double d = v.as_double();
  return std::isfinite(d) && d == std::floor(d);
}

bool HasType(const json::Value& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "string") return v.is_string();
  if (type == "integer") return IsWholeNumber(v);
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_bool();
  if (type == "array") return v.is_array();
  if (type == "null") return v.is_null();
  return true;
}

std::string Article(const std::string& type) {
  return (type == "object" || type == "integer" || type == "array" ? "an " : "a ") + type;
}

std::string CheckObject(const json::Value& schema, const json::Object& o,
                        const std::string& where) {
  const json::Value* props = schema.Find("properties");
  if (const json::Value* req = schema.Find("required"); req && req->is_array()) {
    for (const json::Value& name : req->as_array()) {
      if (name.is_string() && !o.Find(name.as_string()))
        return where + "." + name.as_string() + " is required";
    }
  }
  const json::Value* extra = schema.Find("additionalProperties");
  for (const json::Member& m : o.members()) {
    std::string at = where + "." + m.key;
    const json::Value* sub = props ? props->Find(m.key) : nullptr;
    if (!sub && extra && extra->is_bool() && !extra->as_bool())
      return at + " is not an argument of this tool";
    if (!sub && extra && extra->is_object()) sub = extra;
    if (!sub) continue;
    if (std::string v = SchemaViolation(*sub, m.value, at); !v.empty()) return v;
  }
  return "";
}

}  // namespace

std::string SchemaViolation(const json::Value& schema, const json::Value& value,
                            const std::string& where) {
  if (const json::Value* type = schema.Find("type"); type && type->is_string()) {
    if (!HasType(value, type->as_string()))
      return where + ": expected " + Article(type->as_string()) + ", got " + TypeName(value);
  }
  if (value.is_number()) {
    const json::Value* min = schema.Find("minimum");
    if (min && min->is_number() && value.as_double() < min->as_double())
      return where + ": at least " + json::Serialize(*min);
    const json::Value* max = schema.Find("maximum");
    if (max && max->is_number() && value.as_double() > max->as_double())
      return where + ": at most " + json::Serialize(*max);
  }
  if (value.is_string()) {
    const json::Value* min = schema.Find("minLength");
    if (min && min->is_int() && value.as_string().size() < static_cast<size_t>(min->as_int()))
      return where + ": must not be empty";
    const json::Value* max = schema.Find("maxLength");
    if (max && max->is_int() && value.as_string().size() > static_cast<size_t>(max->as_int()))
      return where + ": at most " + json::Serialize(*max) + " characters";
  }
  if (const json::Value* allowed = schema.Find("enum"); allowed && allowed->is_array()) {
    bool found = false;
    for (const json::Value& a : allowed->as_array()) found = found || a == value;
    if (!found) return where + ": one of " + json::Serialize(*allowed);
  }
  if (value.is_array()) {
    const json::Value* max_items = schema.Find("maxItems");
    if (max_items && max_items->is_int() &&
        value.as_array().size() > static_cast<size_t>(max_items->as_int()))
      return where + ": at most " + json::Serialize(*max_items) + " items";
    if (const json::Value* items = schema.Find("items")) {
      const json::Array& a = value.as_array();
      for (size_t i = 0; i < a.size(); ++i) {
        std::string v = SchemaViolation(*items, a[i], where + "[" + std::to_string(i) + "]");
        if (!v.empty()) return v;
      }
    }
  }
  if (value.is_object()) return CheckObject(schema, value.as_object(), where);
  return "";
}

}  // namespace agentd::cli::mcp
