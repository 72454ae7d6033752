// Ending every process beneath the daemon (docs/PROTOCOL.md, "Reuse").
//
// The daemon is a child subreaper, so whatever an exec started, including
// what called setsid or double-forked, is beneath it in /proc. The sweep
// SIGKILLs everything there except the spared subtrees (the --init
// workload) through pidfds, waits on those pidfds until every process it
// signalled has exited (no fixed pauses), reaps, and walks again until
// nothing is left or `limit` passes. The verification is a separate fresh
// walk (ProcessesLeft) that trusts nothing the kill loop believed. Runs on
// the io thread (the Reaper's thread).
#pragma once

#include <sys/types.h>

#include <asio.hpp>
#include <chrono>
#include <vector>

#include "agentd/protocol/reset.h"
#include "proc/reaper.h"

namespace agentd {

struct SweepResult {
  int64_t killed = 0;  // distinct processes that were alive and got SIGKILL
};

// `spared` must live until it completes.
asio::awaitable<SweepResult> SweepProcesses(Reaper& reaper, const std::vector<pid_t>& spared,
                                            std::chrono::milliseconds limit);

// The processes beneath the daemon now (the spared subtrees left out), as
// remaining items: the verification walk.
std::vector<ResetRemaining> ProcessesLeft(const std::vector<pid_t>& spared);

}  // namespace agentd
