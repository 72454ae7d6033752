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
// Before step 1, while work that cannot be handed over midway is in progress (a
// run, a context's create or reset, a launch, a guest reset), the upgrade
// is pending: it waits, woken by Wake() each time such work may have ended,
// until the daemon is quiet of it or --upgrade-wait-ms passed (then it is
// refused, naming what was still in progress and for how long). Meanwhile
// new work of those kinds is held (server/request_hold.h), so a stream of
// short runs cannot starve it. A reason that does not end by itself (a
// stop, output lost to a disk error) refuses at once.
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
#include "sys/busy_reason.h"
#include "sys/process_start_time.h"
#include "upgrade/handover_state.h"

namespace agentd {

// What the daemon hands over, asked for at the moment of the execve.
struct UpgradeSources {
  // Refuses while the daemon cannot hand over (stopping, a reset); asked
  // again after the check, right before the execve.
  std::function<Status()> ready;
  // What the upgrade waits for (transient) or is refused by (not); nullopt
  // when the daemon is quiet of it.
  std::function<std::optional<BusyReason>()> busy;
  // Holds new work of those kinds (true) or releases it (false); and how
  // many requests are held now.
  std::function<void(bool)> hold;
  std::function<int64_t()> held;
  // Pending (true) or over (false): connections then read only what they
  // count at once, so the execve loses no byte (server/http_server.h).
  std::function<void(bool)> handing_over;
  // true once the reads stopped by handing_over(true) have completed and
  // their bytes are counted (HttpServer::FirstReadsSettled()).
  std::function<bool()> reads_settled;
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
  // `wait`: --upgrade-wait-ms, how long an upgrade may be pending (0:
  // refused at once while anything is in progress).
  Upgrader(asio::io_context& io, Reaper& reaper, std::string state_dir,
           std::vector<std::string> argv, std::string binary, std::chrono::milliseconds wait,
           UpgradeSources sources);

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
  // Something the pending upgrade may be waiting for ended: it looks again.
  void Wake();
  // Health's "upgrade": pending or not, what it waits for and how long.
  json::Object State() const;
  int64_t upgrades() const { return upgrades_; }
  int64_t failures() const { return failures_; }

 private:
  asio::awaitable<void> Run(int64_t attempt);
  // Until the daemon is quiet of what cannot be handed over midway, or the
  // refusal that names what was still in progress.
  asio::awaitable<Status> AwaitQuiet(int64_t attempt);
  // Until the reads stopped when the upgrade became pending completed.
  asio::awaitable<Status> AwaitReadsSettled();
  asio::awaitable<Status> Check(const std::string& binary);
  Result<HandoverState> Gather(std::vector<int>& fds, int64_t attempt);
  Status Replace(const std::string& binary, int64_t attempt);
  void Report(int64_t attempt, const Status& outcome);
  // upgrade-status.json while pending: the last outcome as it was (its
  // "attempt" unchanged, so a reader waiting for the outcome waits on)
  // and what the upgrade waits for.
  void ReportPending(int64_t attempt);
  void WriteStatus(const json::Object& status);

  asio::io_context& io_;
  Reaper& reaper_;
  std::string state_dir_;
  std::vector<std::string> argv_;
  std::string binary_;
  std::chrono::milliseconds wait_;
  UpgradeSources sources_;
  asio::steady_timer wake_;
  bool running_ = false;
  int64_t pending_attempt_ = 0;
  std::chrono::steady_clock::time_point pending_since_;
  std::optional<BusyReason> waiting_for_;
  json::Object last_status_;
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
