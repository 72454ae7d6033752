// ExecEngine: the exec table and every exec's life (docs/PROTOCOL.md,
// "Exec"): idempotent start, spawn, output pumps into the spool, exit and
// output drain, timeouts and kill with escalation, ack and release,
// tombstones, persistence and recovery.
//
// All methods run on the io thread, and Start() never awaits: looking an id
// up and inserting its record happen in one step, so racing identical
// starts produce exactly one process. Blocking disk work (fsync, removing a
// released record) goes to the blocking pool.
#pragma once

#include <sys/resource.h>

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agentd/protocol/exec.h"
#include "auth/bootstrap_state.h"
#include "exec/exec_id.h"
#include "exec/exec_options.h"
#include "exec/exec_record.h"
#include "exec/exec_stdin.h"
#include "exec/exec_store.h"
#include "exec/exec_view.h"
#include "exec/runtime_self_test.h"
#include "exec/state_sync.h"
#include "exec/tombstones.h"
#include "limits/limiter.h"
#include "limits/tenant_cgroup.h"
#include "proc/exec_holder.h"
#include "proc/probe_child.h"
#include "proc/reaper.h"
#include "proc/refusal_filter.h"
#include "proc/runtime_probe.h"
#include "proc/user_db.h"
#include "spool/output_log.h"
#include "sys/busy_reason.h"

namespace agentd {

struct ExecTotals {
  bool busy = false;    // some exec's leader process runs
  int64_t records = 0;  // records of every state
};

class ExecEngine {
 public:
  ExecEngine(asio::io_context& io, asio::thread_pool& blocking, const ExecEngineOptions& options,
             const BootstrapState& bootstrap);
  ~ExecEngine();

  // Prepares the state directory, recovers records, starts the reaper.
  Status Open();
  // On daemon shutdown: SIGKILL every running process group (their output
  // pipes would break anyway; killed_by "daemon_shutdown").
  void Shutdown();
  // After serving: removes the daemon's empty cgroups.
  void CloseLimits() {
    tenant_cgroup_.Close();  // before the Limiter's parent, which may hold it
    limiter_.Close();
    egress_host_.Close();
  }
  // Calls `done` once every exec has finished (its exit recorded) or after
  // `limit`, whichever comes first.
  void WhenFinished(std::chrono::milliseconds limit, std::function<void()> done);
  const std::string& state_dir() const { return state_dir_; }
  // For PID 1 mode (proc/init_workload.h): its command is one more child
  // of this Reaper, and gets the RLIMIT_NOFILE execs get.
  Reaper& reaper() { return reaper_; }
  const std::optional<struct rlimit>& child_nofile() const { return child_nofile_; }

  struct Started {
    ExecView exec;
    bool created = false;
  };
  // A start request checked against the guest, once: its user resolved,
  // its runtime present in the PATH its process gets (else 400
  // runtime_unavailable), a run's default cwd applied, and the child's
  // environment built (the spawn uses this one).
  struct Prepared {
    ExecStartRequest request;
    std::optional<Credentials> identity;
    std::vector<std::string> env;
    bool restricted = false;  // the restricted profile (docs/SECURITY.md)
    // The egress policy in force (the request's or --default-egress) and
    // its rule table, checked here so a bad rule is a 400 before any start.
    std::optional<EgressPolicy> egress;
    std::vector<EgressRule> egress_table;
    // A run's driver (run/code_drivers.h): the argv spawned instead of the
    // request's, and the descriptor given to it as fd 3 (owned by the
    // caller, open until the run ends; -1: none).
    std::optional<std::vector<std::string>> argv;
    int fd3 = -1;
    // A context's channel, the daemon's end (owned by the caller; -1:
    // none): its interpreter, though internal, runs under a holder that
    // keeps a duplicate of this end for a restarted daemon
    // (proc/exec_holder.h), and its record is persisted like an exec's.
    int channel = -1;
    // A context's interpreter (run/code_context.h): no exec-wide timeout,
    // not even the daemon's default; each of its runs has its own
    // deadline, enforced with Expire().
    bool open_ended = false;
  };
  Result<Prepared> Prepare(ExecStartRequest request);
  // Resolves the host names of request.egress (limits/egress_names.h) on
  // the blocking pool into its "resolved", before Prepare() builds the
  // rules from them. `request` must live until it completes.
  asio::awaitable<Status> ResolveEgressNames(ExecStartRequest& request);
  // Looks the id up (same request: the record; different: 409; released:
  // 410) and starts a new exec. An exec with cgroup limits is spawned once
  // its group exists (made off the io thread): until then its record is
  // `launching`.
  Result<Started> Start(const ExecId& id, ExecStartRequest request);
  // Start(), completing once the process is launched or failed to, so the
  // answer shows the process (or the spawn failure) for every exec. `id`
  // and `request` must live until it completes.
  asio::awaitable<Result<Started>> StartLaunched(const ExecId& id, ExecStartRequest& request);
  // Completes once `exec` is launched (at once for most execs).
  asio::awaitable<void> Launched(ExecView exec);
  // A /v1/run, checked by Prepare() first: an internal record with an id
  // the daemon mints ("run.<n>.<pid>").
  Result<Started> StartRun(Prepared prepared);
  // The runtimes present for an exec with no request env (health).
  std::vector<std::string> Runtimes() const;
  // Every runtime with why it cannot run (health's runtimes_unavailable).
  std::vector<RuntimeCheck> RuntimeChecks() const;
  // Each interpreter's self-test (exec/runtime_self_test.h), for health.
  std::vector<RuntimeSelfTests::Verdict> RuntimeSelfTestVerdicts() const;
  // Changes whenever the three above may answer differently: a probe of
  // the PATH (made by this call when a PATH directory changed) or a
  // self-test verdict. Health keeps its serialized lists while it is equal.
  struct RuntimeEpoch {
    unsigned long long probes = 0;
    uint64_t self_tests = 0;
    bool operator==(const RuntimeEpoch&) const = default;
  };
  RuntimeEpoch RuntimeEpochNow() const;
  // Ends a running exec as its timeout would: killed_by "timeout", the
  // limit `timeout_sec` (a context run's deadline on its interpreter).
  void Expire(const ExecView& exec, int64_t timeout_sec);
  // Removes a finished internal record and its files (no tombstone).
  void Discard(const ExecView& exec);
  // After a crash (run/context_table.h): the channel a context
  // interpreter's holder gave back, once (empty: none); and every internal
  // record no context took back, killed if it runs and discarded once it
  // finished.
  UniqueFd TakeChannel(const ExecView& exec);
  void DiscardUnclaimedInternal(const std::vector<std::string>& claimed);
  // 400 for a malformed id, 410 for a released one, 404 for an unknown one.
  Result<ExecView> Find(std::string_view id);
  Result<ExecInfo> Ack(std::string_view id);
  // GET /v1/execs/{id}/egress: the accounting so far (live while the exec's
  // programs are attached, the final counts after it ended).
  Result<EgressReport> Egress(std::string_view id);
  // A context's run: the attempts of the exec's processes since the last
  // call (or the start), taken out of its live counts and kept in its
  // totals; nullopt without accounting.
  std::optional<EgressReport> TakeEgress(std::string_view id);
  Result<ExecInfo> Kill(std::string_view id, const KillRequest& request);
  // Sets a PTY exec's window size (the terminal's foreground group gets
  // SIGWINCH); 409 not_a_pty for an exec without one. Once the output is
  // complete the terminal is gone and a resize changes nothing.
  Result<ExecInfo> Resize(std::string_view id, const ResizeRequest& request);
  // Begins a stdin write at `offset` (exec/exec_stdin.h).
  asio::awaitable<Result<std::unique_ptr<StdinWrite>>> BeginStdin(
      std::string_view id, uint64_t offset, std::chrono::milliseconds io_timeout);
  std::vector<ExecInfo> List() const;

  // Guest reset (docs/PROTOCOL.md, "Reuse"), in three steps. KillAll():
  // SIGKILLs every exec's process group and cgroup (killed_by "reset").
  // AllFinished(): every exit recorded. DropAll(): forgets every record
  // and released id and starts generation + 1; returns the record
  // directories for the caller to remove (off the io thread).
  void KillAll();
  // Marks every running exec killed_by "reset" and stops its timers,
  // before a sweep kills its processes from outside the engine.
  void MarkResetKill();
  bool AllFinished() const;
  std::vector<std::string> DropAll();
  // 0 until the first reset; an id of an earlier generation is unknown.
  int64_t generation() const { return generation_; }
  ExecTotals Totals() const;

  const ExecEngineOptions& options() const { return options_; }
  const Reaper& reaper() const { return reaper_; }
  const Limiter& limiter() const { return limiter_; }
  // The tenant generation's cgroup (a reset kills it and Advance()s it).
  TenantCgroup& tenant_cgroup() { return tenant_cgroup_; }
  const TenantCgroup& tenant_cgroup() const { return tenant_cgroup_; }
  // The restricted profile's filter; null when the kernel cannot load one
  // (restricted_unavailable() says why).
  const RefusalFilter* refusal_filter() const { return refusal_filter_.get(); }
  const std::string& restricted_unavailable() const { return restricted_unavailable_; }
  // What restricted execs get bound read-only (proc/readonly_mounts.h);
  // empty with readonly_unavailable() saying why when the daemon cannot.
  const std::vector<std::string>& readonly_paths() const { return readonly_paths_; }
  const std::string& readonly_unavailable() const { return readonly_unavailable_; }
  // Why "network": "none" cannot be applied here ("" when it can).
  const std::string& network_unavailable() const { return network_unavailable_; }
  // Why "disk_bytes" cannot be enforced here ("" when it can).
  const std::string& scratch_unavailable() const { return scratch_unavailable_; }
  // Why no "egress" policy can be enforced here ("" when every mode can).
  const std::string& egress_unavailable() const { return egress_host_.why(); }
  // "bpf" or "nftables": the rung that enforces them ("" when none).
  const char* egress_enforcer() const { return egress_host_.enforcer_name(); }
  // An exec of this generation ran unrestricted as root (docs/PROTOCOL.md,
  // "Reuse"): nothing a reset checks proves what it may have changed.
  bool privileged_generation() const { return privileged_generation_; }
  int64_t running() const { return running_; }

  // Upgrade in place (exec/exec_handover.cc, docs/OPERATIONS.md). HandOver():
  // every running or draining exec with the numbers of the descriptors it
  // needs (appended to `fds`, still close-on-exec); refuses while an exec
  // cannot be described (launching, a run, a cgroup, an output gap).
  // ExpectHandover(), before Open(): the predecessor's list, so recovery
  // brings those execs back as running, with their pipes pumped again.
  Result<json::Array> HandOver(std::vector<int>& fds);
  // An idle context's interpreter goes with the next HandOver() too.
  void KeepOnUpgrade(const ExecView& exec) { exec.record()->keep_on_upgrade = true; }
  // The io thread's executor (a handed-over context's channel runs on it).
  asio::any_io_executor executor() { return io_.get_executor(); }
  void ExpectHandover(json::Array execs, int64_t generation);
  // What keeps HandOver() from describing the execs now, for an upgrade
  // that waits (upgrade/upgrader.h): the first reason that will not end by
  // itself (output lost to a disk error), else the first that will (a
  // launch in progress, stdin still given without a holder); internal
  // records are their runs' and contexts' to report.
  std::optional<BusyReason> UpgradeBlocker() const;
  // Called whenever such a reason may have ended (a launch done, an exec
  // finished, its whole stdin given), and by the contexts when a run
  // answered: the waiting upgrade looks again.
  void SetOnSettled(std::function<void()> f) { on_settled_ = std::move(f); }
  void NoteSettled() const {
    if (on_settled_) on_settled_();
  }

 private:
  using SharedRecord = std::shared_ptr<ExecRecord>;

  // exec_engine.cc: the table, persistence, recovery, release.
  Result<SharedRecord> FindRecord(std::string_view id);
  asio::awaitable<void> WaitFinished(std::chrono::milliseconds limit, std::function<void()> done);
  // The records on disk; first, before the tenant cgroup's start removes a
  // dead predecessor's empty groups (an exec that ended while no daemon
  // ran leaves its cgroup empty), the egress maps of those that ran.
  std::vector<StoredExec> LoadAndTakeOverEgress();
  void RecoverAll(std::vector<StoredExec> stored);
  void Recover(StoredExec stored, std::chrono::system_clock::time_point now);
  // The egress accounting of a recovered record: its final counts, or the
  // predecessor's maps taken over (`runs_on`: it runs on under this
  // daemon), or a record saying what was lost and from when.
  void RecoverEgress(ExecRecord& rec, const std::optional<json::Value>& state, bool runs_on,
                     std::chrono::system_clock::time_point now);
  // LoadAndTakeOverEgress()'s maps (or why not), by exec id, until RecoverAll().
  std::unordered_map<std::string, Result<std::unique_ptr<EgressGuard>>> taken_egress_;
  const json::Object* HandedOver(const std::string& id) const;
  void Adopt(const SharedRecord& rec, const json::Object& handed);
  void Attach(const SharedRecord& rec, Stream s, int fd);
  // `handing_over`: an internal record's too, for the next binary to recover.
  void Persist(const ExecRecord& rec, bool handing_over = false);
  void ScheduleRelease(const SharedRecord& rec, std::chrono::milliseconds delay);
  void Release(const SharedRecord& rec);
  Result<std::optional<Credentials>> ResolveIdentity(const ExecStartRequest& request);
  // The restricted profile's read-only paths, their probe started in
  // OpenRestriction and judged in SettleRestriction once it is waited for.
  struct RestrictionProbe {
    size_t probe = 0;
    std::vector<std::string> paths;
  };
  Result<RestrictionProbe> OpenRestriction(ProbeChildren& probes);
  void BuildSeccompFilter();
  Status SettleRestriction(const ProbeChildren& probes, RestrictionProbe& started);
  Result<std::optional<Credentials>> ResolveRestrictedIdentity(const ExecStartRequest& request);
  Status CheckCapacity() const;
  Result<Started> Insert(const std::string& id, std::string fingerprint, Prepared prepared,
                         bool internal);

  // exec_process.cc: the life of a process.
  void Launch(const SharedRecord& rec, Prepared& prepared);
  asio::awaitable<void> LaunchInGroup(SharedRecord rec, std::shared_ptr<Prepared> prepared);
  void SpawnProcess(const SharedRecord& rec, Prepared& prepared);
  void FailLaunch(const SharedRecord& rec, const std::string& reason, int exit_code);
  asio::awaitable<void> Pump(SharedRecord rec, Stream s);
  void OnLeaderExit(const SharedRecord& rec, int wait_status,
                    std::optional<std::chrono::system_clock::time_point> ended = std::nullopt);
  // exec_held.cc: execs under a holder (proc/exec_holder.h).
  asio::awaitable<void> ReadHolder(SharedRecord rec);
  void WatchHolder(const SharedRecord& rec, int fd);
  void EndHolder(ExecRecord& rec);
  struct Held {  // a holder a restarted daemon connected to
    UniqueFd conn;
    HolderReport report;
    UniqueFd out;
    UniqueFd err;
    HolderStdin in_report;  // when report.stdin_state says stdin went through it
    UniqueFd in;            // the relay's write end, while stdin is open
    UniqueFd pty;           // a PTY exec's master (report.magic kMagicPty)
    UniqueFd scratch;       // the exec's "disk_bytes" tmpfs, when it has one
    UniqueFd channel;       // a context's channel (the daemon's end), when it kept one
  };
  std::unique_ptr<Held> ConnectHolder(pid_t pid, std::string& why);
  asio::awaitable<void> DiscardOnceFinished(SharedRecord rec);
  void AdoptHeld(const SharedRecord& rec, Held& held);
  // After recovery: holders of execs no record claims are told to end them.
  void EndUnclaimedHolders();
  void OnPumpDone(const SharedRecord& rec);
  void ExpireDrain(const SharedRecord& rec);
  void Finalize(const SharedRecord& rec);
  void OnTimeout(const SharedRecord& rec);
  void SignalGroup(const ExecRecord& rec, int signo);
  void ArmGrace(const SharedRecord& rec, std::chrono::seconds grace);

  // exec_limits.cc: limits that end a process (docs/PROTOCOL.md, "Limits").
  Status ApplyLimits(ExecStartRequest& request, const std::optional<Credentials>& identity,
                     ExecRecord& rec);
  void HitLimit(const SharedRecord& rec, LimitHit hit);
  void WatchLimits(const SharedRecord& rec);
  void PollLimits();
  void CheckLimitsAtExit(const SharedRecord& rec, const std::optional<std::string>& signal,
                         int exit_code);
  void ReleaseGroup(const SharedRecord& rec);
  // Takes over the cgroup a predecessor made for `rec` (exec/group_state.h);
  // logged when it cannot, and the kernel alone enforces the limits then.
  void AdoptGroup(ExecRecord& rec, const json::Object& state);
  // Makes the tenant cgroup and starts its join probe (none when it is
  // unavailable); SettleTenantCgroup judges it once it is waited for.
  std::optional<size_t> OpenTenantCgroup(ProbeChildren& probes);
  void SettleTenantCgroup(const ProbeChildren& probes, std::optional<size_t> join);
  // exec_process.cc: the egress programs (limits/egress_guard.h), attached
  // right before the spawn; released with their final counts at the end.
  Status AttachEgress(const SharedRecord& rec);
  void ReleaseEgress(const SharedRecord& rec);
  void CountEgress(const EgressReport& r);
  void ArmSweep();
  void CountExit(const ExecRecord& rec, bool spawn_failed);

  asio::io_context& io_;
  asio::thread_pool& blocking_;
  const ExecEngineOptions options_;
  const BootstrapState& bootstrap_;
  std::string state_dir_;
  std::unique_ptr<ExecStore> store_;
  std::unique_ptr<StateSync> sync_;  // after store_: made by Open()
  Tombstones tombstones_;
  RetentionBudget budget_;
  Reaper reaper_;
  std::unordered_map<std::string, SharedRecord> table_;
  uint64_t next_seq_ = 1;
  int64_t running_ = 0;
  std::optional<struct rlimit> child_nofile_;  // the limit children get back
  Limiter limiter_;
  TenantCgroup tenant_cgroup_;
  mutable RuntimeProbe runtime_probe_;  // health's runtimes, cached per PATH
  // Made by Open() (it needs the children's RLIMIT_NOFILE); destroyed
  // before the reaper its handlers are registered with.
  std::unique_ptr<RuntimeSelfTests> self_tests_;
  std::vector<std::weak_ptr<ExecRecord>> watched_;  // running execs with polled limits
  asio::steady_timer limit_timer_;
  bool limit_timer_armed_ = false;
  asio::steady_timer sweep_timer_;
  uint64_t next_run_ = 1;
  bool stopping_ = false;
  int64_t generation_ = 0;
  std::unique_ptr<RefusalFilter> refusal_filter_;
  std::string restricted_unavailable_;
  std::vector<std::string> readonly_paths_;
  std::string readonly_unavailable_;
  std::string network_unavailable_;
  std::string scratch_unavailable_;
  EgressHost egress_host_;
  bool privileged_generation_ = false;
  std::function<void()> on_settled_;
  json::Array handed_over_;  // ExpectHandover()'s list, until Open()
  std::string holder_dir_;   // <state-dir>/h; empty: execs run without holders
};

}  // namespace agentd
