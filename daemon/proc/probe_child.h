// A start-up probe: does a step the spawn child will take (a namespace, a
// mount) work for this daemon? Tried in a throwaway forked child, so the
// daemon itself never changes, and answered before any request relies on it.
#pragma once

#include <string>
#include <vector>

namespace agentd {

// Each probe's `step(arg)` runs in a forked child (raw clone, not sharing
// memory) and its answer is what it returned: 0 for success, else an
// errno; -1 when the child cannot be made or dies by a signal, with why.
// `step` runs on the child side (proc/child_side.h): raw system calls only.
//
// Several probes at once (ExecEngine::Open): each Start forks its child at
// once, WaitAll waits for them all, so a start pays for the slowest probe
// rather than the sum of them (a fork and a namespace cost milliseconds on
// a busy host). The children share nothing: each has its own copy of the
// daemon's memory, taken when it is forked, so `arg` need only live until
// Start returns. The destructor waits for any child not waited for yet.
class ProbeChildren {
 public:
  ProbeChildren() = default;
  ProbeChildren(const ProbeChildren&) = delete;
  ProbeChildren& operator=(const ProbeChildren&) = delete;
  ~ProbeChildren() { WaitAll(); }

  // Forks a child running `step(arg)`; the number is Outcome()'s.
  size_t Start(int (*step)(const void* arg), const void* arg);
  // An outcome known without a child (the probe failed before it).
  size_t Settled(int err, std::string why);
  void WaitAll();
  // After WaitAll: child `i`'s answer (with `*why` set when it is -1).
  int Outcome(size_t i, std::string* why) const;

 private:
  struct Child {
    long pid = -1;  // -1 once waited for (or never forked)
    int err = -1;
    std::string why;
  };
  std::vector<Child> children_;
};

}  // namespace agentd
