// Pipes for children. Both ends are close-on-exec and numbered 3 or above
// (so a dup2 onto 0, 1 or 2 in a child can never collide with them, even
// when the daemon was started with a standard descriptor closed).
#pragma once

#include "agentd/protocol/status.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

// `nonblocking_read`/`nonblocking_write` set O_NONBLOCK on that end only;
// `capacity` (bytes, 0 = kernel default) is a hint for F_SETPIPE_SZ; one
// the kernel refuses (above /proc/sys/fs/pipe-max-size for an unprivileged
// daemon) falls back to 1 MiB, that limit's default, then to the default.
Result<Pipe> MakePipe(bool nonblocking_read, bool nonblocking_write, int capacity = 0);

// Moves `fd` to a number >= 3 (close-on-exec), closing the original.
Result<UniqueFd> AboveStdio(UniqueFd fd);

}  // namespace agentd
