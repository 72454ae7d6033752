// Reaper: collects every child that exits, tini-style.
//
// Start() makes the daemon a child subreaper (PR_SET_CHILD_SUBREAPER), so
// orphaned grandchildren are re-parented to it rather than to init, and
// waits for SIGCHLD with an asio::signal_set; each SIGCHLD runs a
// waitpid(-1, WNOHANG) loop that reaps everything that has exited. Watched
// pids (exec leaders) get their wait status through their handler; the rest
// are orphans, reaped and counted. As PID 1 the same loop is what init must
// do. Every child the daemon creates must be registered here, and nothing
// else in the daemon may call wait*(): this loop would steal its status.
// Used only on the io thread.
#pragma once

#include <sys/types.h>

#include <asio.hpp>
#include <cstdint>
#include <functional>
#include <unordered_map>

#include "agentd/protocol/status.h"

namespace agentd {

class Reaper {
 public:
  using ExitHandler = std::function<void(int wait_status)>;

  explicit Reaper(asio::io_context& io);
  Status Start();
  void Stop();

  // Registers `pid` (a child just created on this thread). The handler
  // runs on the io thread once, when the child has been reaped.
  void Watch(pid_t pid, ExitHandler handler);
  uint64_t orphans_reaped() const { return orphans_reaped_; }

  // Runs the waitpid loop now (also done on every SIGCHLD).
  void ReapAll();

 private:
  void Arm();

  asio::signal_set signals_;
  std::unordered_map<pid_t, ExitHandler> watched_;
  uint64_t orphans_reaped_ = 0;
  bool stopped_ = false;
};

}  // namespace agentd
