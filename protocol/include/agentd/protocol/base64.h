// Standard base64 (RFC 4648, with padding): how bytes that may not be UTF-8
// (process output, stdin) travel in JSON and SSE.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace agentd {

std::string Base64Encode(std::string_view bytes);
void AppendBase64(std::string& out, std::string_view bytes);
// nullopt for anything that is not canonical padded base64.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace agentd
