// Structured logs: one JSON object per line on stderr, e.g.
// {"ts":"...","level":"info","msg":"request","method":"GET",...}.
// Callable from any thread (a line is written with a single write(2)).
// Never log tokens, environments, command lines or process output at
// info level or above: operators ship these lines to shared systems.
#pragma once

#include <optional>
#include <string_view>

#include "agentd/protocol/json.h"

namespace agentd {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

std::optional<LogLevel> ParseLogLevel(std::string_view name);
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
void Log(LogLevel level, std::string_view message, json::Object fields = {});

}  // namespace agentd
