// The kernel's start time of a process: with its pid, names one process
// even after the pid was reused (the pid file, a context's note).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace agentd {

// Field 22 of /proc/<pid>/stat; none when the process is gone.
std::optional<uint64_t> ProcessStartTime(pid_t pid);

}  // namespace agentd
