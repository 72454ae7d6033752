// StateSync: when the exec records written under the state directory reach
// the disk (--state-sync; docs/OPERATIONS.md, "Durability of the state").
// A record is written (exec/exec_store.h) into the page cache on the io
// thread before the daemon answers, so a daemon crash loses nothing in any
// mode; the fsyncs here only bound what a guest crash or power loss loses,
// and none of them runs on the io thread:
//   none    no fsync; the kernel writes back on its own (ext4: metadata
//           within its 5 s commit interval, data within 30 s).
//   batch   group commit: every record written since the last commit is
//           fsynced (its newest meta.json, its directory, the execs
//           directory) in one blocking-pool task, at most once per
//           kStateSyncBatch and never two at once.
//   always  each write is fsynced the same way in its own pool task at once.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/thread_pool.hpp>
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "agentd/trees/unique_fd.h"
#include "exec/exec_options.h"

namespace agentd {

inline constexpr std::chrono::milliseconds kStateSyncBatch{50};

class StateSync {
 public:
  // `root` is the directory holding the records' directories.
  StateSync(asio::io_context& io, asio::thread_pool& pool, StateSyncMode mode, std::string root)
      : pool_(pool), mode_(mode), root_(std::move(root)), timer_(io) {}
  // Syncs what is still pending, blocking (the daemon is stopping).
  ~StateSync();

  // A record's meta.json in `dir` was replaced by `file` (still open).
  void Written(UniqueFd file, const std::string& dir);

 private:
  struct Dirty {
    UniqueFd file;
    std::string dir;
  };
  // fsync of each file and its directory, then of `root`. Any thread.
  static void SyncAll(const std::vector<Dirty>& dirty, const std::string& root);
  void Arm();     // batch: the next commit, kStateSyncBatch from now
  void Commit();  // pending_ to the pool

  asio::thread_pool& pool_;
  const StateSyncMode mode_;
  const std::string root_;
  asio::steady_timer timer_;
  std::vector<Dirty> pending_;           // one per record (its newest file): at most --max-execs
  bool armed_ = false;                   // batch: a commit is scheduled
  std::atomic<bool> committing_{false};  // batch: a commit runs on the pool
};

}  // namespace agentd
