// InitWorkload: the PID 1 duties of `agentd --init [--] CMD...`
// (docs/OPERATIONS.md, "PID 1 mode"), tini-style.
//
// Reaping is not done here: the exec engine's Reaper already reaps every
// child of the daemon, and as PID 1 (or a subreaper) every orphan of the
// guest is one. This class only adds the image's own command:
//
// - Start() spawns CMD with the daemon's standard descriptors, working
//   directory and environment (every AGENTD_* variable removed; never the
//   token), in its own session and process group, and registers it with the
//   Reaper. With a `user` ("USER[:GROUP]", Docker's USER syntax, resolved in
//   the guest's /etc/passwd and /etc/group at launch) CMD runs as that user,
//   with its groups, HOME, USER and LOGNAME, while the daemon stays root: an
//   injected image keeps its USER and agentd can still run execs as anyone.
// - SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to the daemon
//   are forwarded to CMD's whole process group. SIGTERM and SIGINT also ask
//   the daemon to stop, once CMD has exited (at once when it is not running).
// - CMD's exit is logged; it stops the daemon only with `exit_with_cmd`, and
//   then the daemon's exit status is CMD's (128 + n for a signal; 127 or 126
//   when it could not be started).
//
// - An upgrade in place (docs/OPERATIONS.md, "Upgrade") keeps CMD: the
//   new binary adopts its pid (Adopt, before the Reaper's first loop, so an
//   exit during the execve is still CMD's) and never starts it again.
//
// What it does not do: CMD gets no controlling terminal (it runs in a new
// session, as execs do; an interactive shell belongs in a PTY exec), and
// processes CMD left behind in its group are not killed when it exits.
// Used only on the io thread.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <asio.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agentd/protocol/status.h"
#include "proc/reaper.h"

namespace agentd {

class InitWorkload {
 public:
  // Called at most once, with the exit status the daemon should have.
  using StopHandler = std::function<void(int exit_code)>;

  InitWorkload(asio::io_context& io, Reaper& reaper, std::vector<std::string> command,
               bool exit_with_cmd, std::string user, StopHandler stop);

  // The workload the previous binary started (an upgrade in place): `pid`
  // is CMD's, or -1 when it had already exited. Call before the Reaper
  // starts; Start() then launches nothing.
  void Adopt(pid_t pid);
  // Watches the forwarded signals and starts CMD (if any) with `nofile`.
  // Call after the Reaper has started. A Status only when the signals cannot
  // be watched; a CMD that cannot be started is logged and counts as an exit.
  Status Start(std::optional<struct rlimit> nofile);
  bool running() const { return pid_ > 0; }
  // CMD's pid while it runs (-1 otherwise): a guest reset spares its subtree.
  pid_t pid() const { return pid_; }
  // SIGTERM or SIGINT arrived: the daemon drains until CMD has exited.
  bool stop_requested() const { return stop_requested_; }

 private:
  void Launch();
  void WatchExit();
  void Arm();
  void OnSignal(int signo);
  void OnExit(int exit_code, const std::optional<std::string>& signal);
  void RequestStop(int exit_code);

  asio::signal_set signals_;
  Reaper& reaper_;
  std::vector<std::string> command_;
  bool exit_with_cmd_;
  std::string user_;  // USER[:GROUP]; empty: the daemon's identity
  std::optional<struct rlimit> nofile_;
  StopHandler stop_;
  pid_t pid_ = -1;
  bool stop_requested_ = false;  // SIGTERM or SIGINT arrived
  bool stopped_ = false;         // stop_ was called
  bool adopted_ = false;         // started by the binary before an upgrade
};

}  // namespace agentd
