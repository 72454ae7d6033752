// The exec engine's start: the state directory, recovery, the probes of
// what the host allows (limits, the restricted profile, read-only paths,
// the empty network, scratch mounts, egress). Runs once per start or
// upgrade, so the release build compiles it for size (COLD_SOURCES,
// daemon/CMakeLists.txt; docs/BUILDING.md, "Binary size").
#include <sys/resource.h>
#include <sys/stat.h>

#include "exec/exec_engine.h"
#include "log/log.h"
#include "proc/child_env.h"
#include "proc/empty_network.h"
#include "proc/readonly_mounts.h"
#include "proc/scratch_mount.h"

extern char** environ;

namespace agentd {
namespace {

// Raises the soft descriptor limit to the hard one (each running exec holds
// a few descriptors) and returns the original, which children get back.
std::optional<struct rlimit> RaiseNofile() {
  struct rlimit original;
  if (::getrlimit(RLIMIT_NOFILE, &original) != 0) return std::nullopt;
  if (original.rlim_cur >= original.rlim_max) return std::nullopt;
  struct rlimit raised = original;
  raised.rlim_cur = original.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &raised) != 0) return std::nullopt;
  return original;
}

}  // namespace

Status ExecEngine::Open() {
  Result<std::string> dir = PrepareStateDir(options_.state_dir);
  if (!dir.ok()) return dir.status();
  state_dir_ = std::move(*dir);
  store_ = std::make_unique<ExecStore>(state_dir_ + "/execs");
  AGENTD_RETURN_IF_ERROR(store_->Open());
  sync_ = std::make_unique<StateSync>(io_, blocking_, options_.state_sync, store_->root());
  AGENTD_RETURN_IF_ERROR(
      tombstones_.Load(state_dir_ + "/released", std::chrono::system_clock::now()));
  std::vector<StoredExec> stored = LoadAndTakeOverEgress();
  child_nofile_ = RaiseNofile();
  AGENTD_RETURN_IF_ERROR(limiter_.Open(options_.limits_mode));
  // The start-up probes (proc/probe_child.h) run together: each child
  // (sharing this memory, no fork) starts at once, the seccomp filter is
  // compiled and the egress probe (programs loaded here, no child) runs in
  // this thread meanwhile, and then all are waited for. A start pays for
  // the slowest of them, not their sum (docs/ARCHITECTURE.md, "Start-up";
  // docs/BENCHMARKS.md, "Start to first health"). Every verdict is in
  // before Open returns, so before the daemon listens: health never
  // reports a capability a probe has not confirmed, and no exec starts on
  // one.
  ProbeChildren probes;
  std::optional<size_t> join = OpenTenantCgroup(probes);
  Result<RestrictionProbe> restriction = OpenRestriction(probes);
  if (!restriction.ok()) return restriction.status();
  size_t network = StartEmptyNetworkProbe(probes);
  size_t scratch = StartScratchMountProbe(probes);
  BuildSeccompFilter();
  egress_host_.Open(options_.egress_enforcer);
  probes.WaitAll();
  SettleTenantCgroup(probes, join);
  AGENTD_RETURN_IF_ERROR(SettleRestriction(probes, *restriction));
  network_unavailable_ = EmptyNetworkVerdict(probes, network);
  scratch_unavailable_ = ScratchMountVerdict(probes, scratch);
  // Dead daemons' bare tenant groups (one directory walk of every group
  // beside ours) go off the start path: nothing waits for them.
  if (!tenant_cgroup_.sweep_parent().empty()) {
    asio::post(blocking_,
               [parent = tenant_cgroup_.sweep_parent()] { TenantCgroup::SweepStale(parent); });
  }
  if (!scratch_unavailable_.empty()) {
    Log(LogLevel::kInfo, "disk_bytes unavailable", json::Object().Set("why", scratch_unavailable_));
  }
  if (!egress_host_.available()) {
    Log(LogLevel::kInfo, "egress policy unavailable",
        json::Object().Set("why", egress_host_.why()));
  } else {
    Log(LogLevel::kInfo, "egress policy",
        json::Object().Set("enforcer", std::string(egress_host_.enforcer_name())));
  }
  if (!network_unavailable_.empty()) {
    Log(LogLevel::kInfo, "network none unavailable",
        json::Object().Set("why", network_unavailable_));
  }
  Log(LogLevel::kInfo, "limits",
      json::Object()
          .Set("mechanism", std::string(limiter_.mechanism_name()))
          .Set("why", limiter_.fallback_reason()));
  ArmSweep();
  if (options_.exec_holder) {
    // <dir>/<pid>.sock must fit a unix socket address (108 bytes).
    std::string hdir = state_dir_ + "/h";
    if (hdir.size() + 17 > 107) {
      Log(LogLevel::kWarn, "execs run without holders: the state directory's path is too long",
          json::Object().Set("state_dir", state_dir_));
    } else if (::mkdir(hdir.c_str(), 0700) != 0 && errno != EEXIST) {
      Log(LogLevel::kWarn, "execs run without holders", json::Object().Set("errno", errno));
    } else {
      holder_dir_ = std::move(hdir);
    }
  }
  // Recovery first: execs handed over by an upgrade watch their leaders
  // before the reaper's first loop, which would reap them as orphans.
  RecoverAll(std::move(stored));
  EndUnclaimedHolders();
  handed_over_.clear();
  AGENTD_RETURN_IF_ERROR(reaper_.Start());
  self_tests_ = std::make_unique<RuntimeSelfTests>(
      io_, reaper_, [this] { return BuildChildEnv(environ, bootstrap_.launch_env(), nullptr, {}); },
      child_nofile_);  // its tests start at the first check (health, a run), not here: an
                       // upgrade in place starts no process of its own
  Log(LogLevel::kInfo, "exec engine ready",
      json::Object()
          .Set("state_dir", state_dir_)
          .Set("recovered", table_.size())
          .Set("released_ids", tombstones_.size()));
  return Status::Ok();
}

void ExecEngine::BuildSeccompFilter() {
  // Compiled once here: the spawn child may not allocate (proc/spawn.h).
  if (SeccompFilterSupported(&restricted_unavailable_)) {
    Result<std::unique_ptr<RefusalFilter>> filter = BuildRefusalFilter();
    if (filter.ok()) {
      refusal_filter_ = std::move(*filter);
    } else {
      restricted_unavailable_ = filter.status().message();
    }
  }
}

Result<ExecEngine::RestrictionProbe> ExecEngine::OpenRestriction(ProbeChildren& probes) {
  // The defaults, the daemon's binary and its state are bound where the
  // daemon can; paths the operator named must be, or the daemon does not
  // start (an exec never runs with less than the operator asked for).
  std::vector<std::string> optional;
  if (options_.default_readonly_paths) {
    optional = DefaultReadonlyPaths();
    optional.push_back("/proc/self/exe");
    optional.push_back(state_dir_);
  }
  Result<std::vector<std::string>> paths = ResolveReadonlyPaths(optional, options_.readonly_paths);
  if (!paths.ok()) return paths.status();
  size_t probe = StartReadonlyMountsProbe(probes, *paths);
  return RestrictionProbe{probe, std::move(*paths)};
}

Status ExecEngine::SettleRestriction(const ProbeChildren& probes, RestrictionProbe& started) {
  readonly_unavailable_ = ReadonlyMountsVerdict(probes, started.probe);
  if (readonly_unavailable_.empty()) {
    readonly_paths_ = std::move(started.paths);
  } else if (!options_.readonly_paths.empty()) {
    return Status::InvalidRequest("--readonly-path " + options_.readonly_paths.front() + ": " +
                                  readonly_unavailable_);
  }
  json::Array readonly;
  for (const std::string& p : readonly_paths_) readonly.emplace_back(p);
  Log(refusal_filter_ ? LogLevel::kInfo : LogLevel::kWarn, "restricted profile",
      json::Object()
          .Set("available", refusal_filter_ != nullptr || options_.restricted_without_seccomp)
          .Set("seccomp", refusal_filter_ != nullptr)
          .Set("default_profile", options_.default_profile)
          .Set("user", options_.restricted_user)
          .Set("why", restricted_unavailable_)
          .Set("readonly_paths", std::move(readonly))
          .Set("readonly_why", readonly_unavailable_));
  return Status::Ok();
}

}  // namespace agentd
