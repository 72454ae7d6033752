// The OOM killer's view of the daemon and its children (docs/PROTOCOL.md,
// "Limits"): the daemon lowers its own oom_score_adj so that when memory
// runs out the kernel kills a child, never the daemon; children raise
// theirs at spawn (proc/spawn.h). Any thread.
#pragma once

#include <sys/types.h>

#include <optional>

#include "agentd/protocol/status.h"

namespace agentd {

inline constexpr int kMinOomScoreAdj = -1000;
inline constexpr int kMaxOomScoreAdj = 1000;

// Writes /proc/self/oom_score_adj (lowering needs CAP_SYS_RESOURCE).
Status SetOwnOomScoreAdj(int value);
// /proc/<pid>/oom_score_adj; nullopt when unreadable.
std::optional<int> ReadOomScoreAdj(pid_t pid);

}  // namespace agentd
