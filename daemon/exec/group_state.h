// An exec's cgroup as the next daemon reads it: in the handover entry of
// an upgrade in place (exec/exec_handover.cc) and in meta.json while the
// exec runs, for a daemon restarted after a crash (exec/exec_recovery.cc).
// Either way the successor takes the same directories over
// (Limiter::AdoptGroup) and reads the same counters, so a limit reached
// after it took over ends the exec with the same `killed_by`.
#pragma once

#include <cstdint>

#include "agentd/protocol/json.h"
#include "limits/limiter.h"

namespace agentd {

// `seq` is the exec's start order, which names its group ("e<seq>").
json::Object EncodeGroupState(const GroupPaths& paths, uint64_t seq);
// Missing members read as empty (AdoptGroup() refuses what is not whole).
GroupPaths DecodeGroupState(const json::Object& o);
uint64_t GroupStateSeq(const json::Object& o);

}  // namespace agentd
