// TreeWatcher: the changes under one directory, from inotify
// (docs/PROTOCOL.md, "Watch").
//
// Watches are added through the directory descriptors ConfinedRoot opened
// (as /proc/self/fd/N), never through re-resolved path strings, so a watch
// cannot be steered outside the root. With `recursive`, every directory
// below is watched at start and each new one as it appears; the entries a
// new directory already holds when its watch lands are reported as
// `created`, so nothing made in the gap is missed.
//
// Events come out in the kernel's order. A rename within the watched tree
// is one `renamed` (from, to); a move out is `removed`, a move in
// `created`. Consecutive `modified` events for one path are coalesced. A
// kernel queue overflow, or a new directory beyond `max_dirs`, is an
// `overflow` event: the caller must rescan, because events were lost.
//
// Not thread-safe; one owner. The inotify descriptor is non-blocking and
// close-on-exec; the owner waits for it to become readable, then Drain().
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "agentd/protocol/json.h"
#include "agentd/protocol/status.h"
#include "agentd/trees/unique_fd.h"
#include "fs/confined_root.h"
#include "fs/lexical_path.h"

namespace agentd {

struct WatchEvent {
  std::string kind;    // created | modified | removed | renamed | overflow
  std::string path;    // guest path ("" for overflow)
  std::string type;    // "dir" or "file" (anything that is not a directory)
  std::string from;    // renamed: the old guest path
  std::string reason;  // overflow: "kernel_queue" or "directory_limit"
};

class TreeWatcher {
 public:
  // `display` is the guest path of `dir` (event paths are built from it).
  // Fails with not_found / not_a_directory / unsafe_path as the fs routes
  // do, and too_many_watches (503) when the kernel's inotify limits or
  // `max_dirs` refuse the starting tree.
  static Result<TreeWatcher> Start(const ConfinedRoot& root, const RelPath& dir,
                                   std::string display, bool recursive, size_t max_dirs);

  int fd() const { return inotify_.get(); }
  size_t watched_dirs() const { return dirs_.size(); }
  // Appends what the kernel has queued (nothing when it has nothing). A
  // move whose second half has not arrived yet is held back; a later
  // Drain (or FlushPending) settles it.
  Status Drain(std::vector<WatchEvent>& out);
  // Reports a held move-out as `removed` (its move-in never came).
  void FlushPending(std::vector<WatchEvent>& out);
  bool has_pending() const { return pending_move_.cookie != 0; }
  // False once the watched directory itself is gone.
  bool alive() const { return alive_; }

  // An upgrade in place (server/handed_streams.h): the inotify descriptor
  // (appended to `fds`; its queue keeps every event the kernel reports in
  // the meantime) and what the watcher knows of it, and the watcher the
  // next binary rebuilds from that. Restore takes the descriptor only
  // when it succeeds.
  json::Value Save(std::vector<int>& fds) const;
  static Result<TreeWatcher> Restore(const ConfinedRoot& root, const json::Value& saved);

 private:
  struct Dir {
    RelPath rel;          // below the root ConfinedRoot resolves from
    std::string display;  // guest path
  };
  struct PendingMove {
    uint32_t cookie = 0;
    std::string path;
    bool is_dir = false;
  };

  TreeWatcher(const ConfinedRoot& root, UniqueFd inotify, bool recursive, size_t max_dirs)
      : root_(&root), inotify_(std::move(inotify)), recursive_(recursive), max_dirs_(max_dirs) {}

  // Watches `dir` and, when recursive, the directories below it. With
  // `report` the entries found are appended to `out` as created.
  Status AddTree(const RelPath& rel, const std::string& display, std::vector<WatchEvent>* out);
  Status AddOne(int dir_fd, const RelPath& rel, const std::string& display);
  void Emit(std::vector<WatchEvent>& out, WatchEvent ev);
  // A watched directory renamed within the tree: its watches (and those
  // below it) now carry the new paths.
  void Rebase(const std::string& from, const std::string& to, const RelPath& to_rel);
  // Drops the watches of a directory that left the tree and all below it.
  void Forget(const std::string& gone);
  void Overflow(std::vector<WatchEvent>& out, const char* reason);

  const ConfinedRoot* root_;
  UniqueFd inotify_;
  bool recursive_;
  size_t max_dirs_;
  int top_wd_ = -1;
  bool alive_ = true;
  bool limit_reported_ = false;
  std::unordered_map<int, Dir> dirs_;  // by watch descriptor
  PendingMove pending_move_;
};

}  // namespace agentd
