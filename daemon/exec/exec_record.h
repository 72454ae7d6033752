// ExecRecord: everything the daemon knows about one exec, from start to
// release (docs/PROTOCOL.md, "Exec").
//
// Phases: kRunning while the leader process lives; kDraining after it
// exited while its output streams are still open (at most
// --output-drain-ms); kExited once the output is complete. The wire's
// "state" is "running" until kExited, so a caller that sees "exited" knows
// stdout_bytes and stderr_bytes are final. `busy` counts only kRunning.
//
// Records are shared (std::shared_ptr) between the exec table and the
// coroutines serving it (pumps, readers), so a release never pulls a record
// from under a reader. Used only on the io thread.
#pragma once

#include <sys/types.h>

#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "agentd/protocol/exec.h"
#include "agentd/trees/unique_fd.h"
#include "exec/change_signal.h"
#include "limits/egress_guard.h"
#include "limits/limiter.h"
#include "proc/scratch_mount.h"
#include "spool/output_log.h"

namespace agentd {

enum class Stream { kStdout = 0, kStderr = 1 };
std::string_view StreamName(Stream s);

struct ExecRecord {
  using SystemClock = std::chrono::system_clock;
  using SteadyClock = std::chrono::steady_clock;
  enum class Phase { kRunning, kDraining, kExited };

  explicit ExecRecord(asio::any_io_executor ex)
      : timeout_timer(ex), grace_timer(ex), drain_timer(ex), release_timer(ex) {}

  // Identity.
  std::string id;
  std::string fingerprint;  // ExecFingerprint() of the start request
  uint64_t seq = 0;         // start order, for the list
  std::string dir;          // <state-dir>/execs/exec-<id>

  // Process and outcome.
  pid_t pid = 0;
  Phase phase = Phase::kRunning;
  std::optional<int64_t> exit_code;
  std::optional<std::string> signal;
  bool timed_out = false;
  std::optional<std::string> killed_by;
  std::optional<std::string> error;
  SystemClock::time_point started_at;
  SteadyClock::time_point started_steady;
  std::optional<SystemClock::time_point> ended_at;
  int64_t duration_ms = 0;  // final once the leader exited
  bool acked = false;
  std::optional<SystemClock::time_point> acked_at;
  bool released = false;
  // The leader was spawned by this daemon (not recovered, not a failed
  // spawn), so its group may outlive it until the ack ends it.
  bool owns_group = false;

  // Limits (docs/PROTOCOL.md, "Limits"): the effective values, the limit
  // that ended the process, and the exec's cgroup (none under rlimits).
  ExecLimits limits;
  // The profile it runs under and, once spawned restricted, what was applied.
  std::string profile = kProfileUnrestricted;
  std::optional<std::string> network;  // "none": run in an empty network namespace
  std::optional<ExecRestriction> restriction;
  // The egress policy (docs/PROTOCOL.md, "Egress"), its programs while the
  // exec runs (attached by this daemon, or a predecessor's taken over), and
  // its accounting once it ended (read when it finished; persisted, and
  // marked incomplete when a restart cost it attempts).
  std::optional<EgressPolicy> egress;
  std::vector<EgressRule> egress_table;
  std::unique_ptr<EgressGuard> egress_guard;
  std::optional<EgressReport> egress_final;
  // A context's interpreter (run/code_context.h): what its runs took out
  // of the maps so far (ExecEngine::TakeEgress), and, once it ended, the
  // share no run took yet.
  std::optional<EgressReport> egress_taken;
  std::optional<EgressReport> egress_untaken;
  std::optional<int64_t> timeout_sec;
  std::optional<LimitHit> limit;
  std::unique_ptr<ExecGroup> group;
  // "disk_bytes": the exec's scratch tmpfs, watched until it finished.
  ScratchDisk scratch;
  // A /v1/run record: never persisted, removed (not tombstoned) once the
  // run's answer was built.
  bool internal = false;
  // An internal record under a holder (a context's interpreter): persisted
  // like an exec's (meta.json says "internal"), so a daemon restarted
  // after a crash takes it back; `channel` is then the context's channel
  // as its holder gave it back, until the context takes it.
  bool held_internal = false;
  UniqueFd channel;
  // A context's idle interpreter (run/context_handover.cc): an upgrade in
  // place hands this internal record over (set right before it gathers).
  bool keep_on_upgrade = false;
  // True until the process was spawned (a group is made first, off the io
  // thread); start answers wait for it.
  bool launching = false;

  // Output.
  std::unique_ptr<OutputLog> logs[2];
  OutputLog& log(Stream s) { return *logs[static_cast<int>(s)]; }
  ChangeSignal changed;

  // Machinery while the process runs (empty for recovered records).
  std::unique_ptr<asio::posix::stream_descriptor> pipes[2];
  int pumps_running = 0;
  bool drain_expired = false;
  int64_t kill_grace_sec = kDefaultKillGraceSec;
  asio::steady_timer timeout_timer;
  asio::steady_timer grace_timer;
  std::optional<SteadyClock::time_point> grace_deadline;
  asio::steady_timer drain_timer;
  asio::steady_timer release_timer;

  // Its holder (proc/exec_holder.h): the connection that reports the
  // exit, and that the daemon ends with 'A' once the output is complete.
  std::unique_ptr<asio::posix::stream_descriptor> holder;

  // A PTY exec: pipes[0] is the terminal's master (output and resize),
  // or under a holder the pipe it moves the output into; then pty_master
  // is the master, for resize, until the output is complete.
  bool pty = false;
  UniqueFd pty_master;

  // Stdin (docs/PROTOCOL.md, "Stdin").
  bool stdin_stream = false;
  std::unique_ptr<asio::posix::stream_descriptor> stdin_pipe;
  uint64_t stdin_next = 0;    // bytes the process was given
  bool stdin_closed = false;  // eof was sent, or the process cannot read any more
  bool stdin_busy = false;    // a stdin request is writing
  ChangeSignal stdin_idle;

  bool running() const { return phase == Phase::kRunning; }
  bool finished() const { return phase == Phase::kExited; }
  ExecInfo Info() const;
};

}  // namespace agentd
