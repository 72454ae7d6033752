#include "proc/wait_status.h"

#include <sys/wait.h>

#include "proc/signals.h"

namespace agentd {

ExitOutcome DecodeWaitStatus(int status) {
  ExitOutcome out;
  if (WIFEXITED(status)) {
    out.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    out.exit_code = 128 + WTERMSIG(status);
    out.signal = SignalName(WTERMSIG(status));
    out.core_dumped = WCOREDUMP(status);
  } else {
    // Stopped or continued: waitpid is never asked for these (no WUNTRACED),
    // so this is a defect; report it as an abnormal end rather than 0.
    out.exit_code = 128;
    out.signal = "UNKNOWN";
  }
  return out;
}

}  // namespace agentd
