// TempJournal: the temporaries the daemon creates outside its state dir
// (a file write's ".agentd-tmp-*", a tree upload's ".agentd-stage-*"),
// recorded one small file each in <state-dir>/temporaries while they
// exist, so a daemon killed mid-transfer removes them at its next start.
//
// Enable() runs once at start-up, before any transfer; Record() is then
// safe from any thread. Without Enable() (unit tests) nothing is recorded.
// Does not guarantee: a temporary whose directory path cannot be read back
// from /proc/self/fd (no /proc) is not recorded; one whose directory was
// moved since is not found (the sweep removes only exact names it made).
#pragma once

#include <string>
#include <utility>

namespace agentd {

class TempJournal {
 public:
  // One recorded temporary; forgets it when destroyed (after the caller
  // removed or renamed the temporary). Move-only.
  class Entry {
   public:
    Entry() = default;
    explicit Entry(std::string path) : path_(std::move(path)) {}
    Entry(Entry&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
    Entry& operator=(Entry&& other) noexcept;
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    ~Entry() { Forget(); }
    void Forget();

   private:
    std::string path_;
  };

  // Removes every temporary a previous daemon recorded in `dir` (creating
  // `dir`, mode 0700), then records new ones there. Returns how many it removed.
  static int Enable(const std::string& dir);
  // Records `name` in the directory `dirfd`, before the caller creates it.
  static Entry Record(int dirfd, const std::string& name);
  // Record() for a caller that keeps the entry itself (the
  // StageOptions::journal hook, agentd/trees/stage_tree.h): answers the
  // entry's file ("" when nothing was recorded), which the caller removes
  // to forget it.
  static std::string RecordPath(int dirfd, const std::string& name);
  // Stops recording (tests).
  static void Disable();
};

}  // namespace agentd
