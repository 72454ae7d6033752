// Upgrader: the daemon's side of an upgrade in place (docs/OPERATIONS.md,
// "Upgrading"). SIGUSR2 (sent by `agentd --upgrade`) starts one:
//
//   1. the state is written to <state-dir>/upgrade.json and the new binary
//      runs as a child with --upgrade-check, which must read it and exit 0;
//   2. then, in one step on the io thread (nothing else runs in between),
//      the state is gathered again, the handed-over descriptors lose
//      close-on-exec, and the daemon execve()s the new binary with
//      --upgrade-resume, keeping its PID: its children stay its children.
//
// Any failure before the execve took effect leaves this daemon serving:
// the descriptors get close-on-exec back, the failure is counted (health's
// upgrade_failures) and written to <state-dir>/upgrade-status.json, where
// `agentd --upgrade` reads the outcome. The new binary writes the success.
// Used only on the io thread.
#pragma once

#include <asio.hpp>
#include <functional>
#include <string>
#include <vector>

#include "agentd/protocol/json.h"
#include "agentd/protocol/status.h"
#include "proc/reaper.h"
#include "sys/process_start_time.h"
#include "upgrade/handover_state.h"

namespace agentd {

// What the daemon hands over, asked for at the moment of the execve.
struct UpgradeSources {
  // Refuses while the daemon cannot hand over (stopping, a reset); asked
  // again after the check, right before the execve.
  std::function<Status()> ready;
  // Idle contexts (run/context_handover.cc), asked first: they mark their
  // interpreters for `execs`, or refuse while a run is in progress.
  std::function<Result<json::Array>(std::vector<int>& fds)> contexts;
  std::function<Result<json::Array>(std::vector<int>& fds)> execs;
  std::function<std::vector<int>()> listeners;
  // Tunnels and watch streams (server/handed_streams.h), their descriptors
  // appended to `fds`.
  std::function<json::Array(std::vector<int>& fds)> streams;
  std::function<std::string()> secrets;
  std::function<int64_t()> generation;
  // PID 1 mode's workload pid (-1 once it exited); nullopt otherwise.
  std::function<std::optional<int64_t>()> init_pid;
  std::function<int64_t()> uptime_ms;
};

class Upgrader {
 public:
  // `argv`: the daemon's flags as started (without --upgrade-resume);
  // `binary`: --upgrade-binary, or empty for the path of /proc/self/exe.
  Upgrader(asio::io_context& io, Reaper& reaper, std::string state_dir,
           std::vector<std::string> argv, std::string binary, UpgradeSources sources);

  // The pid file `agentd --upgrade` finds the daemon by; removed on stop.
  // `signal`: the one that asks for an upgrade, written as a third field
  // unless it is SIGUSR2 (what a pid file of two fields means).
  void WritePidFile(int signal);
  void RemovePidFile();
  // A daemon started by an upgrade: the counters carried over; Resumed()
  // reports the success once serving.
  void Carry(const HandoverState& state);
  void Resumed();

  void Request();
  int64_t upgrades() const { return upgrades_; }
  int64_t failures() const { return failures_; }

 private:
  asio::awaitable<void> Run(int64_t attempt);
  asio::awaitable<Status> Check(const std::string& binary);
  Result<HandoverState> Gather(std::vector<int>& fds, int64_t attempt);
  Status Replace(const std::string& binary, int64_t attempt);
  void Report(int64_t attempt, const Status& outcome);

  asio::io_context& io_;
  Reaper& reaper_;
  std::string state_dir_;
  std::vector<std::string> argv_;
  std::string binary_;
  UpgradeSources sources_;
  bool running_ = false;
  int64_t attempts_ = 0;
  int64_t upgrades_ = 0;
  int64_t failures_ = 0;
};

// The signal that asks a daemon in PID 1 mode for an upgrade: SIGUSR2 is
// forwarded to the workload there. A real-time signal nothing else in the
// daemon or a workload's init conventionally uses; as PID 1 the kernel
// delivers only signals the daemon handles, so a daemon that does not
// handle it (or an older one) is never killed by it.
int InitUpgradeSignal();

// The paths of the files in the state directory.
std::string PidFilePath(const std::string& state_dir);
std::string UpgradeStatusPath(const std::string& state_dir);
std::string UpgradeStatePath(const std::string& state_dir);

}  // namespace agentd
