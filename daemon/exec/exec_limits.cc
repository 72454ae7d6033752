// Limits that end a process (docs/PROTOCOL.md, "Limits"): the effective
// limits of a start, the poll of running groups, the checks at the
// leader's exit, and the release of a finished exec's group.
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "exec/exec_engine.h"
#include "exec/group_state.h"
#include "log/log.h"
#include "metrics/daemon_metrics.h"
#include "proc/child_side.h"
#include "proc/probe_child.h"
#include "proc/raw_syscall.h"
#include "sys/read_file.h"

namespace agentd {
namespace {

// How often the counters of running groups are read: a fork bomb under a
// pids limit or a process over its CPU time is ended within about this.
constexpr std::chrono::milliseconds kLimitPollInterval{100};
constexpr std::chrono::seconds kSweepInterval{5};

}  // namespace

Status ExecEngine::ApplyLimits(ExecStartRequest& request,
                               const std::optional<Credentials>& identity, ExecRecord& rec) {
  rec.limits = request.limits.Over(options_.default_limits);
  if (request.timeout_sec) {
    rec.timeout_sec = request.timeout_sec;
  } else if (options_.default_timeout_sec > 0) {
    rec.timeout_sec = options_.default_timeout_sec;
  }
  if (rec.limits.disk_bytes) {
    if (!scratch_unavailable_.empty()) {
      return Status::Error(ErrorCode::kLimitUnsupported,
                           "\"disk_bytes\" is not available in this guest: " + scratch_unavailable_)
          .With("field", std::string("disk_bytes"));
    }
    if (!rec.limits.disk_path) rec.limits.disk_path = kDefaultDiskPath;
    // The mount point must be there: the exec's tmpfs covers it, nothing is made.
    struct stat st;
    if (::stat(rec.limits.disk_path->c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Status::Error(ErrorCode::kInvalidRequest,
                           "field \"disk_path\": " + *rec.limits.disk_path +
                               " is not a directory in this guest (the scratch tmpfs is "
                               "mounted on an existing directory)")
          .With("field", std::string("disk_path"));
    }
  }
  bool as_root = (identity && identity->uid) ? *identity->uid == 0 : ::geteuid() == 0;
  return limiter_.Check(rec.limits, as_root);
}

void ExecEngine::HitLimit(const SharedRecord& rec, LimitHit hit) {
  if (rec->finished()) return;
  if (!rec->killed_by) {
    Log(LogLevel::kInfo, "exec limit reached",
        json::Object().Set("id", rec->id).Set("limit", hit.name).Set("value", hit.value));
    rec->killed_by = hit.name;
    rec->limit = std::move(hit);
    metrics::Daemon().forced_terminations.With({*rec->killed_by}).Inc();
  }
  SignalGroup(*rec, SIGKILL);
  rec->changed.Notify();
}

void ExecEngine::WatchLimits(const SharedRecord& rec) {
  const ExecLimits& l = rec->limits;
  bool counters = rec->group && (l.memory_mb || l.pids || l.cpu_sec);
  if (!counters && !(l.disk_bytes && rec->scratch.valid())) return;
  watched_.push_back(rec);
  if (limit_timer_armed_) return;
  limit_timer_armed_ = true;
  limit_timer_.expires_after(kLimitPollInterval);
  limit_timer_.async_wait([this](const asio::error_code& ec) {
    limit_timer_armed_ = false;
    if (!ec) PollLimits();
  });
}

void ExecEngine::PollLimits() {
  std::vector<std::weak_ptr<ExecRecord>> watched;
  watched.swap(watched_);
  for (std::weak_ptr<ExecRecord>& w : watched) {
    SharedRecord rec = w.lock();
    // Polled until the output is complete: a fork bomb whose leader has
    // exited still counts against the exec's limits.
    if (!rec || rec->finished() || rec->killed_by) continue;
    const ExecLimits& l = rec->limits;
    // A full scratch tmpfs: the writer's next write fails with ENOSPC.
    if (l.disk_bytes && rec->scratch.Full()) {
      HitLimit(rec, DiskHit(*l.disk_bytes));
      continue;
    }
    if (!rec->group) {
      WatchLimits(rec);
      continue;
    }
    GroupCounters c = rec->group->Read();
    if (l.memory_mb && c.oom_kills > 0) {
      HitLimit(rec, MemoryHit(*l.memory_mb));
    } else if (l.pids && c.pids_max_hits > 0) {
      HitLimit(rec, PidsHit(*l.pids));
    } else if (l.cpu_sec && c.cpu_usage_ns && *c.cpu_usage_ns >= *l.cpu_sec * 1'000'000'000LL) {
      HitLimit(rec, CpuHit(*l.cpu_sec));
    } else {
      WatchLimits(rec);
    }
  }
}

void ExecEngine::CheckLimitsAtExit(const SharedRecord& rec,
                                   const std::optional<std::string>& signal, int exit_code) {
  // A shell reports a child ended by signal n as exit 128 + n.
  bool xcpu = signal == "XCPU" || (!signal && exit_code == 128 + SIGXCPU);
  bool xfsz = signal == "XFSZ" || (!signal && exit_code == 128 + SIGXFSZ);
  if (rec->killed_by) return;
  const ExecLimits& l = rec->limits;
  std::optional<LimitHit> hit;
  if (rec->group && l.memory_mb && rec->group->Read().oom_kills > 0) {
    hit = MemoryHit(*l.memory_mb);
  } else if (rec->group && l.pids && rec->group->Read().pids_max_hits > 0) {
    // A fork refused by the group's pids limit before the next poll: the
    // leader may exit on it ("Cannot fork") before PollLimits sees it.
    hit = PidsHit(*l.pids);
  } else if (xcpu && l.cpu_sec) {
    hit = CpuHit(*l.cpu_sec);
  } else if (xfsz && l.file_size_mb) {
    hit = FileSizeHit(*l.file_size_mb);
  } else if (l.disk_bytes && rec->scratch.Full()) {
    // The writer ended on ENOSPC before the next poll saw the tmpfs full.
    hit = DiskHit(*l.disk_bytes);
  } else if (signal == "KILL" && l.cpu_sec && limiter_.mechanism() == LimitMechanism::kRlimit) {
    // RLIMIT_CPU's hard limit (the soft one sends XCPU first) ends in KILL.
    hit = CpuHit(*l.cpu_sec);
  }
  if (!hit) return;
  rec->killed_by = hit->name;
  rec->limit = std::move(hit);
  metrics::Daemon().forced_terminations.With({*rec->killed_by}).Inc();
  // The rest of the group goes with the leader, as the kernel's group OOM
  // kill does under cgroup v2.
  SignalGroup(*rec, SIGKILL);
}

namespace {
// The probe child's step: what an exec's child does first (proc/spawn.h).
AGENTD_CHILD_SIDE int JoinCgroup(const void* procs_fd) {
  int fd = *static_cast<const int*>(procs_fd);
  long r = RawSyscall(SYS_write, fd, reinterpret_cast<long>("0"), 1);
  return r == 1 ? 0 : r < 0 ? static_cast<int>(-r) : EIO;
}
}  // namespace

std::optional<size_t> ExecEngine::OpenTenantCgroup(ProbeChildren& probes) {
  // The base the last daemon on this state dir made its groups in: if it
  // crashed, its tenant's processes are still there (limits/tenant_cgroup.h).
  std::string record = state_dir_ + "/tenant-cgroup";
  Result<std::string> previous = ReadFileToString(record, 4096);
  tenant_cgroup_.Open(options_.reset_cgroup, limiter_.cgroup2_parent(), generation_,
                      previous.ok() ? *previous : std::string());
  if (!tenant_cgroup_.own_base().empty() &&
      (!previous.ok() || *previous != tenant_cgroup_.own_base())) {
    Status written = WriteFileAtomically(record, tenant_cgroup_.own_base());
    if (!written.ok()) {
      Log(LogLevel::kWarn, "cannot record the tenant cgroup for a successor",
          json::Object().Set("error", written.message()));
    }
  }
  if (!tenant_cgroup_.available()) return std::nullopt;
  // Made is not yet joinable: moving a process needs write access to
  // the group it leaves, which a non-delegated guest may lack. A
  // throwaway child tries, so no exec's spawn fails on it later.
  return probes.Start(JoinCgroup, probes.Keep(tenant_cgroup_.leaf_procs_fd()));
}

void ExecEngine::SettleTenantCgroup(const ProbeChildren& probes, std::optional<size_t> join) {
  if (join) {
    std::string why;
    int err = probes.Outcome(*join, &why);
    if (err > 0) {
      why = "cannot move a process into " + tenant_cgroup_.dir() + "/run (" + std::strerror(err) +
            ")";
    }
    if (err != 0) tenant_cgroup_.Disable(why);
  }
  Log(tenant_cgroup_.available() || !options_.reset_cgroup ? LogLevel::kInfo : LogLevel::kWarn,
      "reset processes",
      json::Object()
          .Set("mode", tenant_cgroup_.available() ? "cgroup" : "subreaper")
          .Set("cgroup", tenant_cgroup_.dir())
          .Set("cgroup_unavailable", tenant_cgroup_.why()));
}

void ExecEngine::ReleaseGroup(const SharedRecord& rec) {
  rec->scratch = ScratchDisk();  // the last reference to the exec's tmpfs
  if (!rec->group) return;
  Limiter* limiter = &limiter_;
  asio::post(blocking_, [limiter, g = std::move(rec->group)]() mutable {
    if (!g->TryRemove()) limiter->Linger(std::move(g));
  });
}

void ExecEngine::AdoptGroup(ExecRecord& rec, const json::Object& state) {
  Result<std::unique_ptr<ExecGroup>> group = limiter_.AdoptGroup(DecodeGroupState(state));
  if (group.ok()) {
    rec.group = std::move(*group);
    return;
  }
  // The kernel still enforces its limits; only the ends the daemon reads
  // from the group (killed_by, cpu_sec under cgroups) are lost.
  Log(LogLevel::kWarn, "exec taken over without its cgroup",
      json::Object().Set("id", rec.id).Set("error", group.status().message()));
}

void ExecEngine::ArmSweep() {
  sweep_timer_.expires_after(kSweepInterval);
  sweep_timer_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    if (limiter_.lingering() > 0) {
      Limiter* limiter = &limiter_;
      asio::post(blocking_, [limiter] { limiter->Sweep(); });
    }
    ArmSweep();
  });
}

void ExecEngine::CountExit(const ExecRecord& rec, bool spawn_failed) {
  metrics::DaemonMetrics& m = metrics::Daemon();
  std::string_view outcome =
      metrics::ExitOutcomeLabel(spawn_failed, rec.killed_by.has_value(), rec.signal.has_value(),
                                static_cast<int>(rec.exit_code.value_or(-1)));
  m.execs_exited.With({std::string(outcome)}).Inc();
  // Limit kills were counted when the limit was reached (HitLimit).
  if (rec.killed_by == "timeout" || rec.killed_by == "kill" || rec.killed_by == "daemon_shutdown") {
    m.forced_terminations.With({*rec.killed_by}).Inc();
  }
  if (!spawn_failed) m.exec_duration.Observe(static_cast<double>(rec.duration_ms) / 1000.0);
}

}  // namespace agentd
