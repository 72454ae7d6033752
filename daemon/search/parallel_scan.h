// ParallelScan: the files a walk lists, scanned on other threads while the
// walk goes on, the answer still made in walk order on the walking thread
// (docs/PROTOCOL.md, "Search": the order and the bounds do not depend on
// the threads).
//
// The walk hands over files in batches (up to 128 consecutive files of
// one directory); scanning threads claim batches oldest first and record
// what they find (search/scan_events.h); the walking thread applies each
// batch's record to the answer (search/search_tally.h) once every earlier
// batch is applied, so results, bytes, counts and the bound that ends the
// search are exactly those of one thread scanning in walk order. A hand-
// off per batch, not per file: per file, a lock and a wake-up each way
// cost more than scanning a 2 KiB file. Memory is bounded: at most 4
// sealed batches wait to be claimed and at most 64 are unapplied (the walk
// waits), and once 4 MiB of found lines wait to be applied, the scanners
// of all but the oldest batch wait (the walking thread applies only the
// oldest batch; its scanner never waits, so this cannot deadlock).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "agentd/trees/unique_fd.h"
#include "search/scan_events.h"
#include "search/search_tally.h"

namespace agentd {

// Consecutive files of one directory, as the walk listed them.
class FileBatch {
 public:
  explicit FileBatch(UniqueFd dir);

  void Add(std::string_view name, std::string_view path, size_t walk_at, bool followed,
           uint64_t unreadable_before);
  size_t size() const { return files_.size(); }
  int dir_fd() const { return dir_.get(); }  // invalid when it could not be kept
  const char* name(size_t i) const { return text_.c_str() + files_[i].name_at; }
  // Its path in the answer, and that path relative to the walk's start.
  std::string_view path(size_t i) const;
  std::string_view walk_path(size_t i) const { return path(i).substr(files_[i].walk_at); }
  bool followed(size_t i) const { return files_[i].followed; }
  // Unique in the process: tells this batch from a later one made at the
  // same address.
  uint64_t serial() const { return serial_; }
  // Entries the walk could not open between the file before and this one.
  uint64_t unreadable_before(size_t i) const { return files_[i].unreadable_before; }

 private:
  struct File {
    size_t name_at, path_at, path_len, walk_at;
    uint64_t unreadable_before;
    bool followed;
  };
  UniqueFd dir_;
  uint64_t serial_;
  std::string text_;  // names (NUL-terminated) and paths, back to back
  std::vector<File> files_;
};

// How many threads scan beside the walking one for `requested`
// (SearchOptions::scan_threads): 0 when the walking thread scans.
size_t ScanHelperThreads(size_t requested);

class ParallelScan {
 public:
  // Scans file `i` of a batch into a sink; false: stop. Each scanning
  // thread makes its own (it holds that thread's scanner).
  using FileScan = std::function<bool(const FileBatch&, size_t i, ScanSink&)>;
  // `cancel` (null on the walking thread) is set when the search ends
  // early: a long file's scan should stop at its next block.
  using MakeFileScan = std::function<FileScan(const std::atomic<bool>* cancel)>;

  // `helpers` threads scan beside the caller (0: the caller scans each
  // batch when it is sealed). Threads that cannot be made are done
  // without.
  ParallelScan(size_t helpers, MakeFileScan make, SearchTally& tally);
  ~ParallelScan();  // stops the helpers and waits for them
  ParallelScan(const ParallelScan&) = delete;
  ParallelScan& operator=(const ParallelScan&) = delete;

  size_t helpers() const { return threads_.size(); }

  // The walk lists a file of the directory open as `dir_fd`. False: stop
  // the walk (a bound was hit or the reader is gone).
  bool Add(int dir_fd, std::string_view name, std::string_view path, size_t walk_at, bool followed,
           uint64_t unreadable_before);
  // Ends the current batch (the walk enters a directory). False: stop.
  bool Seal();
  // After the walk: applies every batch. False when the search stopped early.
  bool Finish();
  // Stops without applying what is still unapplied.
  void Abort();

 private:
  struct Batch {
    explicit Batch(UniqueFd dir) : files(std::move(dir)) {}
    FileBatch files;
    ScanLog published;  // found, not yet taken by the walking thread (mu_)
    bool done = false;  // (mu_)
  };
  class Publisher;

  void Helper();
  void ScanBatch(Batch& b, FileScan& scan);
  // Applies what is ready; waits while the queue is full (or, `final`,
  // until it is empty). False: stop.
  bool Pump(bool final);
  bool MainCanProceed() const;  // under mu_
  void WakeMain();              // under mu_
  bool Stop(std::unique_lock<std::mutex>& lock);
  void Join();

  MakeFileScan make_;
  SearchTally& tally_;
  FileScan direct_;  // helpers == 0
  std::unique_ptr<Batch> cur_;
  int cur_src_fd_ = -1;
  bool stopped_ = false;

  std::mutex mu_;
  std::condition_variable work_cv_;  // helpers: a batch queued, room under the cap, stop
  std::condition_variable main_cv_;  // the walking thread: something to apply, room to walk
  std::deque<std::shared_ptr<Batch>> queue_;  // not fully applied, oldest first
  size_t claimed_ = 0;                        // queue_[0, claimed_) are claimed
  size_t cap_waiters_ = 0;
  size_t held_bytes_ = 0;  // published, not yet taken
  bool walk_done_ = false;
  bool main_waiting_ = false;
  bool main_final_ = false;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace agentd
