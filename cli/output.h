// Output: how a command reports. In --json mode exactly one envelope goes
// to stdout per invocation ({"ok": true, "result": ...} or {"ok": false,
// "error": {...}}) and nothing else does; human mode prints readable text,
// errors as one line on stderr. Colour only on a TTY and never with NO_COLOR.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/protocol/json.h"
#include "agentd/protocol/status.h"

namespace agentd::cli {

class Output {
 public:
  explicit Output(bool json);

  bool json() const { return json_; }
  bool stdout_is_tty() const { return stdout_tty_; }
  bool stderr_is_tty() const { return stderr_tty_; }
  bool colour() const { return colour_; }

  // Success: the envelope in JSON mode, else `human` (may be empty) on stdout.
  int Succeed(const json::Value& result, std::string_view human);
  // Failure: the envelope in JSON mode, else "agentctl: <message>" on stderr.
  int Fail(const Status& status, int exit_code);
  int Fail(const Status& status);
  int UsageError(std::string_view message);

  // A table with aligned columns (human mode).
  static std::string Table(const std::vector<std::vector<std::string>>& rows);
  static std::string HumanSize(uint64_t bytes);
  std::string Bold(std::string_view s) const;

 private:
  bool json_;
  bool stdout_tty_;
  bool stderr_tty_;
  bool colour_;
};

}  // namespace agentd::cli
