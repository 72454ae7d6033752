// GuestReset: POST /v1/reset's use case (docs/PROTOCOL.md, "Reuse").
// Returns the guest to a proven-clean state between tenants, or
// quarantines it:
//
// 1. with --token-file and a next token: the token is staged beside the
//    file first (a failure refuses the reset before anything changed) and
//    put in place while step 3's processes die (reuse/token_rotation.h; a
//    failure there stops the reset with only the processes ended);
// 2. every other connection closes (watch streams, tunnels, long polls);
// 3. every process of the generation is killed: its cgroup where the
//    daemon has one (reuse/cgroup_kill.h), then every process beneath the
//    daemon (reuse/process_sweep.h), the --init workload's subtree spared
//    (it never joins a generation's group);
// 4. every exec record, spool and released id is dropped (generation + 1);
//    the reset paths return to their golden copies, the scratch dirs are
//    emptied (reuse/scratch_dirs.h) and, where enabled, the System V IPC
//    objects made since the start are removed (reuse/ipc_sweep.h);
// 5. verification: a fresh walk of /proc, of each reset path and scratch
//    dir, and of the IPC tables; anything found is named in
//    `remaining` and the guest is quarantined until the daemon restarts;
// 6. clean: the next token and launch env are installed, or bootstrap
//    reopens. Quarantined: nothing is installed (the token in force may
//    read metrics; the gate refuses everything else).
//
// The state is `resetting` while a reset runs (other routes answer 503)
// and stays `quarantined` once set. Used only on the io thread.
#pragma once

#include <sys/types.h>

#include <asio.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agentd/protocol/reset.h"
#include "auth/bootstrap_state.h"
#include "exec/exec_engine.h"
#include "reuse/ipc_sweep.h"
#include "reuse/overlay_reset.h"
#include "reuse/reset_ledger.h"
#include "reuse/tree_restore.h"

namespace agentd {

struct GuestResetOptions {
  std::string token_file;                    // --token-file: the next token is written here
  std::vector<std::string> reset_paths;      // --reset-path (or the workdir)
  std::vector<std::string> reset_baselines;  // --reset-baseline, paired in order
  std::vector<std::string> scratch_dirs;     // --reset-scratch: emptied
  // --reset-ipc (or PID 1): remove the System V IPC objects made since the
  // start. Only where the IPC namespace is the guest's own.
  bool sweep_ipc = false;
  // The pids whose subtrees are not the tenant's (the --init workload).
  std::function<std::vector<pid_t>()> spared = [] { return std::vector<pid_t>{}; };
  // How long processes get to disappear after SIGKILL before they count
  // as remaining.
  std::chrono::milliseconds kill_limit{2000};
  // --reset-requires-restricted: a generation in which an exec ran
  // unrestricted as root quarantines instead of being called clean.
  bool requires_restricted = false;
  // --reset-overlay auto: overlays where they can be mounted.
  bool overlay = false;
};

class GuestReset {
 public:
  enum class State { kReady, kResetting, kQuarantined };

  GuestReset(asio::thread_pool& blocking, ExecEngine& engine, BootstrapState& bootstrap,
             GuestResetOptions options);

  // Makes (or finds, from an earlier start) the golden copy of each reset
  // path under `state_dir`/reset-baseline. Before serving.
  Status Open(const std::string& state_dir);

  State state() const { return state_; }
  std::string_view state_name() const;
  int64_t generation() const { return engine_.generation(); }
  const std::string& boot_id() const { return boot_id_; }
  // What the quarantining reset found (empty unless quarantined).
  const std::vector<ResetRemaining>& quarantine_items() const { return quarantine_items_; }
  // Each reset path with how a reset returns it ("overlay" or "restore")
  // and, for "restore" where overlays were not turned off, why not.
  json::Array reset_paths() const;
  // How a reset ends the tenant's processes: {"mode": "cgroup"} (the
  // generation's group, limits/tenant_cgroup.h) or {"mode": "subreaper",
  // "cgroup_unavailable": why not}.
  json::Object reset_processes() const;

  ResetLedger& ledger() { return ledger_; }
  // Waits for `entry`'s reset to end; nullopt when it was refused.
  asio::awaitable<std::optional<ResetReport>> ReportOf(
      const std::shared_ptr<ResetLedger::Entry>& entry);

  // Runs one reset. The caller checked the current token, and that no
  // reset runs and the guest is not quarantined. A Status only when the
  // reset was refused before anything changed, or stopped after ending
  // the processes because the next token could not be put in place.
  // `close_others` closes every client connection but the resetting one.
  // Both arguments must live until it completes (GCC 12: no temporaries
  // in a co_await expression, sys/awaitable.h).
  asio::awaitable<Result<ResetReport>> Run(ResetRequest& request,
                                           const std::function<void()>& close_others);
  // The route calls this once the reset's answer is written (or failed to
  // be): the old overlays and tmpfs a reset swapped out are dropped on a
  // thread of their own, so the kernel's freeing of what the tenant left
  // (the only part of an overlay reset that grows with the files) runs
  // after the answer instead of beside the reset's last steps. The next
  // tenant's tree does not depend on it: the fresh overlay was mounted and
  // verified before the answer. A reset also drops what an earlier one
  // left unreleased before it starts.
  void ReleaseDetached();

 private:
  asio::awaitable<void> WaitExecsFinished(std::chrono::steady_clock::time_point deadline);

  struct ResetPath {
    std::string live;
    std::string golden;
    TreeManifest manifest;                 // touched only by the blocking job of a reset
    std::unique_ptr<OverlaySlot> overlay;  // the fast path, where it could be mounted
    std::string overlay_unavailable;       // why not
  };

  asio::thread_pool& blocking_;
  ExecEngine& engine_;
  BootstrapState& bootstrap_;
  GuestResetOptions options_;
  std::string boot_id_;
  std::string state_dir_;
  // Whether --token-file took the last next token itself (else the state
  // dir keeps them). Touched only inside a reset, on the blocking pool.
  bool token_file_replaceable_ = true;
  State state_ = State::kReady;
  std::vector<ResetRemaining> quarantine_items_;
  ResetLedger ledger_;
  std::vector<std::shared_ptr<ResetPath>> paths_;
  std::vector<IpcObject> ipc_baseline_;   // the image's objects, listed at Open
  std::vector<DetachedLayers> detached_;  // swapped out, until ReleaseDetached()
  int64_t detached_generation_ = 0;       // the generation they belonged to
};

// 32 hex digits from the kernel's random source, new at every start.
std::string NewBootId();

}  // namespace agentd
