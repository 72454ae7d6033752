#include "log/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>

#include "agentd/protocol/time_format.h"

namespace agentd {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};

std::string_view LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

}  // namespace

std::optional<LogLevel> ParseLogLevel(std::string_view name) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (LevelName(l) == name) return l;
  }
  return std::nullopt;
}

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }

bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(); }

void Log(LogLevel level, std::string_view message, json::Object fields) {
  if (!LogEnabled(level)) return;
  json::Object line;
  line.Set("ts", FormatRfc3339(std::chrono::system_clock::now()));
  line.Set("level", std::string(LevelName(level)));
  line.Set("msg", std::string(message));
  for (const json::Member& m : fields.members()) line.Set(m.key, m.value);
  std::string text = json::Serialize(line);
  text += '\n';
  // One write per line keeps lines whole when threads log at once.
  ssize_t unused = ::write(STDERR_FILENO, text.data(), text.size());
  (void)unused;
}

}  // namespace agentd
