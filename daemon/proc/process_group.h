// Ending what is left of a process group after its leader was reaped.
// Pure system calls; any thread.
#pragma once

#include <sys/types.h>

namespace agentd {

// SIGKILLs every process still in the group `pgid` whose leader (pid ==
// pgid, started with setsid) this daemon already reaped. Returns true when
// a signal was sent.
//
// Guards against pid reuse: while any member lives the kernel keeps the
// number `pgid` allocated, so a process with pid == pgid existing now means
// the group is gone and the number belongs to someone else; then nothing is
// signalled. Does not guarantee: a process that left the group (setsid,
// setpgid) is not found here; and if the number was reused by a process
// that made its own group and then exited leaving members, those members
// are signalled (it needs a full pid wrap between the exit and this call).
bool KillLeftoverGroup(pid_t pgid);

}  // namespace agentd
