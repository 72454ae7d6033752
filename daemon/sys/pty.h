// Pseudo-terminals for PTY execs (docs/PROTOCOL.md, "Start" and "Resize").
// Both ends are close-on-exec and numbered 3 or above; the master is
// non-blocking (the daemon's end), the slave blocking (the child's).
#pragma once

#include "agentd/protocol/status.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {

struct PtyPair {
  UniqueFd master;
  UniqueFd slave;
};

// Opens /dev/ptmx and its peer, with the window size set.
Result<PtyPair> OpenPty(int rows, int cols);
// Sets the window size; the kernel signals SIGWINCH to the foreground
// process group of the terminal.
Status ResizePty(int master, int rows, int cols);

}  // namespace agentd
