// Ending a tenant generation's processes by its cgroup (docs/PROTOCOL.md,
// "Reuse"; limits/tenant_cgroup.h): cgroup.kill (Linux 5.14) SIGKILLs every
// process in the group and the groups beneath it at once, whatever session
// or process group it is in and however it forked, so no walk of /proc
// precedes the kill and a fork cannot outrun it. Before 5.14: freeze the
// group (cgroup.freeze, 5.2), wait until the kernel says it is frozen,
// SIGKILL each member, thaw; before that, SIGKILL each listed member until
// the list is empty. Then waits for "populated 0" in cgroup.events, woken
// by inotify when the file changes (no sleeps), until `deadline`. Runs on
// the io thread.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "agentd/protocol/reset.h"

namespace agentd {

struct CgroupKillResult {
  int64_t killed = 0;  // members when the kill was sent
  // "cgroup.kill", "freeze", "signal", or "empty" (nothing was there).
  std::string method;
  // Members still there at the deadline, named.
  std::vector<ResetRemaining> remaining;
};

// `dir` must live until it completes.
asio::awaitable<CgroupKillResult> KillCgroup(const std::string& dir,
                                             std::chrono::steady_clock::time_point deadline);

}  // namespace agentd
