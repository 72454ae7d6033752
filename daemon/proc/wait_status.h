// The one function that turns a wait(2) status into the exec object's
// outcome (docs/PROTOCOL.md, "The exec object"): an exit code, or 128 + n
// and the signal's name. Pure; any thread.
#pragma once

#include <optional>
#include <string>

namespace agentd {

struct ExitOutcome {
  int exit_code = 0;                  // WEXITSTATUS, or 128 + signal number
  std::optional<std::string> signal;  // "TERM" when a signal ended the process
  bool core_dumped = false;
};

ExitOutcome DecodeWaitStatus(int status);

}  // namespace agentd
