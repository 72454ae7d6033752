// Limiter: how this guest enforces an exec's resource limits
// (docs/PROTOCOL.md, "Limits").
//
// Open() picks the mechanism once: cgroup v2 when the daemon can enable the
// memory and pids controllers below its own cgroup (moving itself into a
// leaf when the kernel's "no internal processes" rule needs it); else
// cgroup v1 when the memory and pids hierarchies are mounted and writable
// below the daemon's own groups; else rlimits. Every daemon keeps its
// groups under "agentd-<pid>" in each hierarchy, so several daemons on one
// kernel never touch each other's groups; leftovers of dead daemons are
// removed at start when empty.
//
// Under a cgroup mechanism an exec that asks for memory, pids, cpu or cpus
// gets its own group (ExecGroup), made on the blocking pool before the
// spawn (mkdir in cgroup v1 takes tens of milliseconds on some kernels)
// and joined by the child itself before it executes anything (spawn.h): a
// process of the exec can never run outside its group. file_size is always
// RLIMIT_FSIZE; under rlimits memory is RLIMIT_AS, pids RLIMIT_NPROC (not
// enforced by the kernel for root, so refused for an exec running as root)
// and cpu RLIMIT_CPU (per process).
//
// Thread-safety: Open() and Close() on the main thread before and after
// serving; the const queries anywhere; CreateGroup(), Linger() and Sweep()
// on any thread (the lingering list has its own lock).
#pragma once

#include <sys/resource.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/protocol/limits.h"
#include "agentd/protocol/status.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {

enum class LimitMechanism { kRlimit, kCgroup1, kCgroup2 };
std::string_view LimitMechanismName(LimitMechanism m);

// Cumulative counters of one group since it was made.
struct GroupCounters {
  long long oom_kills = 0;                // processes the kernel OOM-killed in the group
  long long pids_max_hits = 0;            // forks refused by pids.max
  std::optional<long long> cpu_usage_ns;  // CPU time of every process, when accounted
};

// Where one exec's group lives: what an upgrade in place hands to the
// next binary (exec/exec_handover.cc), which reads the same counters.
struct GroupPaths {
  std::string mechanism;  // LimitMechanismName()
  std::vector<std::string> dirs;
  std::string memory_dir;
  std::string pids_dir;
  std::string cpu_usage_file;
};

// One exec's group: a directory in each hierarchy the limits need.
class ExecGroup {
 public:
  ExecGroup() = default;
  ExecGroup(const ExecGroup&) = delete;
  ExecGroup& operator=(const ExecGroup&) = delete;

  // Open cgroup.procs files; the child writes "0" to each (spawn.h).
  const std::vector<UniqueFd>& procs_fds() const { return procs_fds_; }
  void CloseProcsFds() { procs_fds_.clear(); }
  // Cheap (a few small sysfs reads); any thread.
  GroupCounters Read() const;
  bool Empty() const;
  // SIGKILLs every process in the group (cgroup.kill where the kernel has
  // it, else each listed pid, repeated until the list is empty or a bound
  // of rounds passed). Returns how many processes were signalled.
  int KillAll() const;
  // rmdir of every directory; true when all are gone (false: processes left).
  bool TryRemove();
  const std::vector<std::string>& dirs() const { return dirs_; }
  GroupPaths paths() const;

 private:
  friend class Limiter;
  LimitMechanism mechanism_ = LimitMechanism::kCgroup2;
  std::vector<std::string> dirs_;  // one per hierarchy
  std::string memory_dir_;
  std::string pids_dir_;
  std::string cpu_usage_file_;  // cpu.stat (v2) or cpuacct.usage (v1)
  std::vector<UniqueFd> procs_fds_;
};

struct ChildRlimit {
  int resource = 0;
  rlim_t value = 0;  // soft and hard
};

class Limiter {
 public:
  Limiter() = default;
  ~Limiter();
  Limiter(const Limiter&) = delete;
  Limiter& operator=(const Limiter&) = delete;

  // `mode`: "auto", "cgroup2", "cgroup1" or "rlimit". A forced cgroup mode
  // that this guest cannot provide is an error.
  Status Open(std::string_view mode);
  // Removes every empty group and the daemon's own parent directories.
  void Close();

  LimitMechanism mechanism() const { return mechanism_; }
  std::string_view mechanism_name() const { return LimitMechanismName(mechanism_); }
  // Why a cgroup mechanism was not chosen (for the start-up log).
  const std::string& fallback_reason() const { return fallback_reason_; }
  // Limit names this guest enforces ("timeout", "memory", "pids", "cpu",
  // "file_size", "output", "cpus").
  std::vector<std::string> Supported() const;
  // limit_unsupported naming the field when `limits` cannot be enforced.
  Status Check(const ExecLimits& limits, bool runs_as_root) const;
  // True when these limits need a group under the current mechanism.
  bool NeedsGroup(const ExecLimits& limits) const;
  // Makes a group with these limits; blocking (call on the pool). Under
  // cgroup2 it is made in `v2_parent` when given (the tenant generation's
  // group, limits/tenant_cgroup.h), else in the daemon's parent.
  Result<std::unique_ptr<ExecGroup>> CreateGroup(uint64_t seq, const ExecLimits& limits,
                                                 const std::string& v2_parent = {}) const;
  // A group a daemon of this PID made before an upgrade in place, from
  // what ExecGroup::paths() said: under this mechanism, every directory
  // still there. Blocking only in a few stat() calls.
  Result<std::unique_ptr<ExecGroup>> AdoptGroup(const GroupPaths& paths) const;
  // The daemon's cgroup2 parent ("" unless the mechanism is cgroup2).
  std::string cgroup2_parent() const {
    return mechanism_ == LimitMechanism::kCgroup2 ? hierarchies_.front().parent : std::string();
  }
  // The rlimits the child gets for these limits.
  std::vector<ChildRlimit> Rlimits(const ExecLimits& limits) const;
  // Keeps a group whose processes outlived its exec; Sweep() removes it
  // once empty. Both blocking (call on the pool).
  void Linger(std::unique_ptr<ExecGroup> group);
  void Sweep();
  size_t lingering() const;

 private:
  struct Hierarchy {
    std::string name;    // "memory", "pids", "cpu", "cpuacct" (v1) or "unified"
    std::string parent;  // <mount>/<own cgroup>/agentd-<pid>
  };
  Status OpenV2();
  Status OpenV1();
  const Hierarchy* Find(std::string_view name) const;

  LimitMechanism mechanism_ = LimitMechanism::kRlimit;
  std::string fallback_reason_;
  std::vector<Hierarchy> hierarchies_;
  bool cpu_accounting_ = false;  // cpu_sec from the group's usage
  bool cpu_bandwidth_ = false;   // cpus (cpu.max / cfs quota)
  std::string moved_from_;       // v2: the cgroup.procs the daemon left
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<ExecGroup>> lingering_;
};

}  // namespace agentd
