// The tenant's System V IPC objects (docs/PROTOCOL.md, "Reuse"): shared
// memory segments, message queues and semaphore sets outlive the processes
// that made them, so a reset that only killed processes would hand the next
// tenant the last one's shared memory.
//
// Ownership is by time: what exists when the daemon starts (the baseline)
// belongs to the image; every other object in the daemon's IPC namespace is
// the tenant's. That is only safe where the namespace is the guest's own (a
// container, a VM), so the sweep runs when the daemon is PID 1 or was given
// --reset-ipc. POSIX shared memory and named semaphores are files in
// /dev/shm: list it with --reset-scratch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agentd/protocol/reset.h"

namespace agentd {

struct IpcObject {
  std::string kind;  // "shm", "msg" or "sem"
  int64_t id = 0;
  int64_t key = 0;
  bool operator==(const IpcObject&) const = default;
};

// Every object listed in `root`'s shm, msg and sem tables (/proc/sysvipc).
// A missing table lists nothing (a kernel without SysV IPC); one that
// cannot be read is an error, so a reset never calls unseen objects gone.
Result<std::vector<IpcObject>> ListSysvIpc(const std::string& root = "/proc/sysvipc");

struct IpcSweepResult {
  int64_t removed = 0;
  std::vector<ResetRemaining> remaining;  // objects the kernel refused to remove
};

// Removes (IPC_RMID) every object not in `baseline`. A segment still
// attached goes once its last process detaches, so run it after the sweep
// of processes.
IpcSweepResult RemoveIpcBeyond(const std::vector<IpcObject>& baseline,
                               const std::string& root = "/proc/sysvipc");

// The verification: every object now listed that is not in `baseline`.
std::vector<ResetRemaining> IpcLeft(const std::vector<IpcObject>& baseline,
                                    const std::string& root = "/proc/sysvipc");

}  // namespace agentd
