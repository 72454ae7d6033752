#include "exec/state_sync.h"

#include <fcntl.h>
#include <unistd.h>

#include <asio/post.hpp>

#include "metrics/daemon_metrics.h"

namespace agentd {

StateSync::~StateSync() {
  if (!pending_.empty()) SyncAll(pending_, root_);
}

void StateSync::Written(UniqueFd file, const std::string& dir) {
  metrics::Daemon().state_writes.Inc();
  if (mode_ == StateSyncMode::kNone) return;
  // An older file of the same record was renamed over: only the newest counts.
  for (Dirty& d : pending_) {
    if (d.dir == dir) {
      d.file = std::move(file);
      return;
    }
  }
  pending_.push_back({std::move(file), dir});
  if (mode_ == StateSyncMode::kAlways) {
    Commit();
  } else if (!armed_) {
    armed_ = true;
    Arm();
  }
}

void StateSync::Arm() {
  timer_.expires_after(kStateSyncBatch);
  timer_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    // Never two commits at once (they would hold both pool threads on a
    // slow disk): writes made meanwhile gather for the next.
    if (committing_.load()) return Arm();
    armed_ = false;
    committing_.store(true);
    Commit();
  });
}

void StateSync::Commit() {
  asio::post(pool_, [this, batch = std::move(pending_)] {
    SyncAll(batch, root_);
    committing_.store(false);
  });
  pending_.clear();
}

void StateSync::SyncAll(const std::vector<Dirty>& dirty, const std::string& root) {
  metrics::Daemon().state_syncs.Inc();
  auto sync_dir = [](const std::string& path) {
    // A record released meanwhile has no directory left: nothing to keep.
    UniqueFd d(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (d) ::fsync(d.get());
  };
  for (const Dirty& d : dirty) {
    ::fsync(d.file.get());
    sync_dir(d.dir);  // the rename that put the file in place
  }
  sync_dir(root);  // the records' new directories
}

}  // namespace agentd
