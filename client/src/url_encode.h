// Query-string encoding for request targets the client builds.
#pragma once

#include <string>
#include <string_view>

namespace agentd::client {

// Percent-encodes everything but RFC 3986 unreserved characters and '/'.
std::string EncodeQueryValue(std::string_view value);

}  // namespace agentd::client
