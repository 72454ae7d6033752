// Scratch directories (--reset-scratch, docs/PROTOCOL.md "Reuse"): a reset
// empties each one; the directory itself stays, with its mode and owner.
// For /tmp, /var/tmp and /dev/shm (POSIX shared memory and named
// semaphores), which have no golden copy worth keeping.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agentd/protocol/reset.h"

namespace agentd {

struct ScratchResult {
  int64_t removed_entries = 0;
  std::vector<ResetRemaining> remaining;  // what could not be removed, and why
};

// Removes every entry inside `dir`, never following a symlink (the dir
// itself is opened with O_NOFOLLOW: a tenant cannot point it elsewhere).
ScratchResult EmptyScratchDir(const std::string& dir);

// The verification: every entry still inside `dir`.
std::vector<ResetRemaining> ScratchLeft(const std::string& dir);

}  // namespace agentd
