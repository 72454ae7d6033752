// Checks tool arguments against the tool's own input JSON Schema, so the
// schema a model sees and the check the server makes cannot drift apart.
// Understands the subset the tool schemas use: "type" (object, string,
// integer, boolean, array), "properties", "required",
// "additionalProperties" (false, or a schema), "items", "minimum",
// "maximum", "minLength", "maxLength", "maxItems", "enum". Anything else
// in a schema is description only.
#pragma once

#include <string>

#include "agentd/protocol/json.h"

namespace agentd::cli::mcp {

// Empty when `value` conforms; else one sentence naming the argument
// ("arguments.timeout: expected an integer, got a string").
std::string SchemaViolation(const json::Value& schema, const json::Value& value,
                            const std::string& where = "arguments");

}  // namespace agentd::cli::mcp
