// A start-up probe: does a step the spawn child will take (a namespace, a
// mount) work for this daemon? Tried in a throwaway child, so the daemon
// itself never changes, and answered before any request relies on it.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace agentd {

// Each probe's `step(arg)` runs in a child process and its answer is what
// it returned: 0 for success, else an errno; -1 when the child cannot be
// made or dies by a signal, with why.
//
// The child shares the daemon's memory (CLONE_VM, as the exec holders do,
// proc/exec_holder.h) and runs beside it on a stack of its own, with every
// signal blocked: it copies no page tables and leaves the daemon no
// copy-on-write faults, which a fork of the daemon cost (docs/BENCHMARKS.md,
// "Start to first health"). So `step` is child side (proc/child_side.h):
// raw system calls through RawSyscall (proc/raw_syscall.h) only, never
// libc's syscall() (its errno is the daemon's thread's), no allocation, no
// writes to the daemon's memory; and `arg` must live until the child is
// waited for: pass what Keep returns. Each child still has its own
// descriptor table, mount and network namespaces and cgroup.
//
// Several probes at once (ExecEngine::Open): each Start starts its child
// at once, WaitAll waits for them all, so a start pays for the slowest
// probe rather than the sum of them. The destructor waits for any child
// not waited for yet, before what Keep kept goes.
class ProbeChildren {
 public:
  ProbeChildren() = default;
  ProbeChildren(const ProbeChildren&) = delete;
  ProbeChildren& operator=(const ProbeChildren&) = delete;
  ~ProbeChildren() { WaitAll(); }

  // A copy of `value` that lives until the children are waited for.
  template <typename T>
  const T* Keep(T value) {
    auto kept = std::make_shared<const T>(std::move(value));
    kept_.push_back(kept);
    return kept.get();
  }
  // Starts a child running `step(arg)`; the number is Outcome()'s.
  size_t Start(int (*step)(const void* arg), const void* arg);
  // An outcome known without a child (the probe failed before it).
  size_t Settled(int err, std::string why);
  void WaitAll();
  // After WaitAll: child `i`'s answer (with `*why` set when it is -1).
  int Outcome(size_t i, std::string* why) const;

 private:
  struct Child {
    long pid = -1;  // -1 once waited for (or never started)
    int err = -1;
    std::string why;
    void* stack = nullptr;  // unmapped once waited for
  };
  std::vector<Child> children_;
  std::vector<std::shared_ptr<const void>> kept_;
};

}  // namespace agentd
