// RFC 3339 UTC timestamps, the protocol's one time format
// ("2026-11-29T07:12:54.123Z").
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace agentd {

std::string FormatRfc3339(std::chrono::system_clock::time_point t);
std::optional<std::chrono::system_clock::time_point> ParseRfc3339(std::string_view s);

}  // namespace agentd
