// ExecEngineOptions: what the exec engine is told at construction, and
// nothing else of the daemon's configuration (no HTTP limits, no listen
// addresses): the engine sees only its own vocabulary. Each field is the
// one home of its option: the command line sets it in place
// (DaemonConfig::engine, config/flags.cc) and main.cc hands it over whole.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "agentd/protocol/limits.h"
#include "agentd/protocol/runtime.h"

namespace agentd {

// --state-sync: when exec records reach the disk (exec/state_sync.h).
enum class StateSyncMode : uint8_t { kNone, kBatch, kAlways };

struct ExecEngineOptions {
  std::string state_dir;  // empty: kDefaultStateDir, else $XDG_RUNTIME_DIR, else a temp dir
  std::string workdir;    // default cwd of /v1/run records; empty: DefaultRunCwd's choice
  int64_t ack_ttl_sec = 60;
  std::chrono::milliseconds output_drain{std::chrono::seconds(2)};
  uint64_t retention_stream_bytes = 256ull << 20;
  uint64_t retention_total_bytes = 1ull << 30;
  int64_t max_execs = 4096;
  std::string limits_mode = "auto";  // auto | cgroup2 | cgroup1 | rlimit
  ExecLimits default_limits;         // for execs and runs that do not set them
  int64_t default_timeout_sec = 0;   // 0: none
  int child_oom_score_adj = 500;
  // Profiles (docs/SECURITY.md, "Restricted execs").
  std::string default_profile = "unrestricted";  // for execs and runs that name none
  std::string restricted_user = "nobody";        // who a restricted exec runs as
  // --restricted-without-seccomp: on a kernel that cannot load the filter,
  // restricted execs run with everything else and say so, instead of 400.
  bool restricted_without_seccomp = false;
  // Bound read-only for restricted execs (proc/readonly_mounts.h): the
  // operator's --readonly-path list, which must be applied, and whether the
  // defaults (system directories, the daemon's binary and state) are too.
  std::vector<std::string> readonly_paths;
  bool default_readonly_paths = true;
  // --disable-runtime: runtimes refused (runtime_unavailable,
  // disabled_by_flag) whatever the PATH holds.
  std::vector<Runtime> disabled_runtimes;
  // --default-egress: the egress mode of execs and runs that set no
  // "egress" ("" : none, the guest's network as it is).
  std::string default_egress;
  // --egress-enforcer: which rung enforces egress policies: "auto"
  // (cgroup-BPF, else nftables), "bpf" or "nftables" (limits/egress_guard.h).
  std::string egress_enforcer = "auto";
  // --exec-holder: spawn execs under a holder process that keeps them
  // running through a daemon crash (proc/exec_holder.h).
  bool exec_holder = true;
  StateSyncMode state_sync = StateSyncMode::kBatch;
  // --reset-cgroup auto: every exec joins its tenant generation's cgroup2
  // group (limits/tenant_cgroup.h), which a reset kills whole.
  bool reset_cgroup = true;
};

}  // namespace agentd
