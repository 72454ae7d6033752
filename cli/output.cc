#include "output.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "exit_codes.h"

namespace agentd::cli {

Output::Output(bool json)
    : json_(json),
      stdout_tty_(isatty(STDOUT_FILENO) != 0),
      stderr_tty_(isatty(STDERR_FILENO) != 0),
      colour_(stdout_tty_ && std::getenv("NO_COLOR") == nullptr) {}

int Output::Succeed(const json::Value& result, std::string_view human) {
  if (json_) {
    json::Object envelope;
    envelope.Set("ok", true);
    envelope.Set("result", result);
    std::string text = json::Serialize(envelope);
    text += '\n';
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else if (!human.empty()) {
    std::fwrite(human.data(), 1, human.size(), stdout);
    if (human.back() != '\n') std::fputc('\n', stdout);
  }
  std::fflush(stdout);
  return kExitOk;
}

int Output::Fail(const Status& status) { return Fail(status, ExitCodeFor(status)); }

int Output::Fail(const Status& status, int exit_code) {
  if (json_) {
    json::Object error = ErrorBody(status).as_object().Find("error")->as_object();
    if (status.http_status()) error.Set("http_status", status.http_status());
    json::Object envelope;
    envelope.Set("ok", false);
    envelope.Set("error", std::move(error));
    envelope.Set("exit_code", exit_code);
    std::string text = json::Serialize(envelope);
    text += '\n';
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  } else {
    std::string line =
        "agentctl: " + status.message() + " (" + std::string(status.code_name()) + ")";
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  return exit_code;
}

int Output::UsageError(std::string_view message) {
  std::string text = std::string(message) + "; see 'agentctl --help'";
  if (json_) return Fail(Status::InvalidRequest(text).With("usage", true), kExitUsage);
  std::fprintf(stderr, "agentctl: %s\n", text.c_str());
  return kExitUsage;
}

std::string Output::Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string Output::HumanSize(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  if (unit == 0) {
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[unit]);
  }
  return buf;
}

std::string Output::Bold(std::string_view s) const {
  if (!colour_) return std::string(s);
  return "\x1b[1m" + std::string(s) + "\x1b[0m";
}

}  // namespace agentd::cli
