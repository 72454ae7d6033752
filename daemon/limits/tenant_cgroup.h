// TenantCgroup: one cgroup2 group per tenant generation, which every exec
// of that generation joins (docs/PROTOCOL.md, "Reuse"), so a reset ends
// all of them and all they started, however they left their session or
// process group (setsid, double fork), by the kernel's own list rather
// than a walk of /proc (reuse/cgroup_kill.h).
//
// Layout: <base>/g<N>/run is the leaf a plain exec joins. Under a cgroup2
// Limiter <base> is the Limiter's own parent, and an exec with limits gets
// <base>/g<N>/e<seq> (limits/limiter.h); otherwise <base> is
// "agentd-tenant-<pid>" in the daemon's own cgroup2 group (a hybrid host's
// unified hierarchy needs no controllers for this), and an egress exec's
// own group is <base>/g<N>/e<seq> (limits/egress_guard.h). A process is in
// one cgroup2 group only, so every group of an exec lies inside its
// generation's. The --init workload is spawned outside the engine and
// never joins.
//
// Where cgroup2 is not mounted, not writable (not delegated), or the
// operator said --reset-cgroup off, why() says so and a reset ends
// processes through the subreaper tree alone (reuse/process_sweep.h).
//
// Thread-safety: the io thread (Open, Advance, the accessors); the static
// helpers on any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "agentd/protocol/status.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {

class TenantCgroup {
 public:
  // `wanted`: --reset-cgroup auto. `limiter_parent`: the Limiter's cgroup2
  // parent ("" unless its mechanism is cgroup2). `previous_base`: the base
  // the last daemon on the same state dir used (ExecEngine records it);
  // when that daemon is dead and its base is still there, it crashed with
  // tenant processes in it (held execs and what they started, orphans
  // outside this daemon's tree), and the base is adopted: the next reset
  // ends it with the current generation.
  void Open(bool wanted, const std::string& limiter_parent, int64_t generation,
            const std::string& previous_base = "");
  // On shutdown: removes the generation's groups and the base when empty.
  void Close();

  bool available() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  // The current generation's group ("" when unavailable).
  const std::string& dir() const { return dir_; }
  // Its leaf's cgroup.procs, open for writing (-1 when unavailable).
  int leaf_procs_fd() const { return leaf_procs_.get(); }

  // Makes generation `generation`'s group the one execs join and returns
  // the previous one's directory for RemoveTree (off the io thread). On a
  // failure the mechanism becomes unavailable (why() says why) and the
  // next resets use the subreaper tree.
  std::string Advance(int64_t generation);
  // Where the bare bases of dead daemons beside this one are swept ("" when
  // nowhere): a walk of every group there, which ExecEngine::Open leaves to
  // its blocking pool instead of making every start wait for it.
  const std::string& sweep_parent() const { return sweep_parent_; }
  // Removes the bare "agentd-tenant-<pid>" groups of dead daemons in
  // `parent` (never this daemon's own). Any thread: it touches no member.
  static void SweepStale(const std::string& parent);
  // Gives the mechanism up (the start-up probe could not join the leaf).
  void Disable(std::string why);

  // The adopted base of a crashed predecessor ("" when none); cleared by
  // the call, which hands it to a reset.
  std::string TakeAdopted();
  // The base this daemon's generations are made in ("" when unavailable),
  // for the record the next daemon on the state dir reads.
  const std::string& own_base() const { return own_base_ ? base_ : kNone; }

  // Every pid in `dir` and the groups beneath it.
  static std::vector<pid_t> Members(const std::string& dir);
  // rmdir of `dir` and every group beneath it, deepest first; "" when all
  // are gone, else what failed.
  static std::string RemoveTree(const std::string& dir);

 private:
  Status MakeGeneration(int64_t generation);

  std::string base_;
  std::string sweep_parent_;  // where SweepStale looks ("" when nothing to sweep)
  bool own_base_ = false;     // made here (removed on Close), not the Limiter's
  std::string enable_;        // "+memory +pids ..." copied from the base
  std::string dir_;
  std::string adopted_;
  static inline const std::string kNone;
  UniqueFd leaf_procs_;
  std::string why_ = "not opened";
};

}  // namespace agentd
