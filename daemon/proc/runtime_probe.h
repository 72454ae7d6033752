// RuntimeProbe: which code runtimes a PATH holds, remembered until one of
// its directories changes (docs/PROTOCOL.md, "Run code").
//
// /v1/health lists the runtimes on every call and promises that an
// interpreter installed later appears at once. Probing every PATH
// directory per call (a stat and access per directory and interpreter)
// was most of a health request's cost; instead each directory is watched
// with inotify (entries created, removed, renamed, rewritten or chmod-ed
// in it; the directory itself moved or removed), and a missing directory
// through its nearest existing ancestor, so that its creation is seen. A
// health call then costs one non-blocking read of the inotify descriptor.
// The probe runs again after any event, after an event queue overflow,
// for a different PATH, and on every call when inotify is unavailable or
// the PATH has a relative entry (relative to the daemon's cwd).
//
// Not seen: a change outside the PATH directories that changes what an
// entry in them resolves to (the target of a symlink elsewhere being
// removed); such an interpreter is listed until its directory changes,
// and /v1/run answers runtime_unavailable for it as before.
//
// Thread-safety: Present() locks; any thread.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "agentd/protocol/runtime.h"
#include "agentd/trees/unique_fd.h"
#include "proc/runtimes.h"

namespace agentd {

class RuntimeProbe {
 public:
  std::vector<Runtime> Present(const std::string& path_list);
  // Every runtime's check (CheckRuntimes), cached like Present().
  std::vector<RuntimeCheck> Check(const std::string& path_list);
  // How many times the directories were probed (tests, metrics).
  unsigned long long probes() const;
  // Probes again if a directory changed or `path_list` differs, like
  // Check(), without copying the answer; returns probes(). A caller that
  // keeps something derived from Check() keeps it while this stays equal
  // (health's serialized runtime lists).
  unsigned long long Refresh(const std::string& path_list);

 private:
  bool WatchAll(const std::string& path_list);
  bool Changed();
  void RefreshLocked(const std::string& path_list);

  mutable std::mutex mu_;
  UniqueFd inotify_;
  std::string path_list_;
  std::vector<RuntimeCheck> checks_;
  bool cached_ = false;
  unsigned long long probes_ = 0;
};

}  // namespace agentd
