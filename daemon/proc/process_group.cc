#include "proc/process_group.h"

#include <signal.h>

#include <cerrno>

namespace agentd {

bool KillLeftoverGroup(pid_t pgid) {
  if (pgid <= 1) return false;
  if (::kill(pgid, 0) == 0 || errno != ESRCH) return false;  // the number is in use again
  return ::kill(-pgid, SIGKILL) == 0;
}

}  // namespace agentd
