// BackgroundHasher: the ETag of an upload (docs/PROTOCOL.md, "ETags and
// preconditions"), hashed on a thread of its own while the writer thread
// goes on writing.
//
// SHA-256 costs about as much CPU per byte as all the rest of an upload
// (socket reads, the block copy, the file write) together: hashed on the
// writer thread, in line with each write, it was 40% of the daemon's
// samples during a 1 GiB upload and set the upload's pace (perf,
// docs/BENCHMARKS.md). Here the writer hands each block over once written
// and goes on with the next; the hasher hashes the blocks in order and
// gives each back through `recycle` (the io thread refills it).
//
// The first block is hashed in line, so a one-block upload (most files)
// starts no thread. At most kHashQueueBlocks blocks wait for the hasher;
// Add() waits beyond that, so memory stays bounded whatever the speeds.
// When no thread can be started, every block is hashed in line.
//
// One caller thread (the writer) calls Add() and Finish(); the destructor
// stops the thread and joins it (an upload given up).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "fs/file_tags.h"

namespace agentd {

inline constexpr size_t kHashQueueBlocks = 4;

class BackgroundHasher {
 public:
  using Recycle = std::function<void(std::string)>;
  explicit BackgroundHasher(Recycle recycle) : recycle_(std::move(recycle)) {}
  ~BackgroundHasher();
  BackgroundHasher(const BackgroundHasher&) = delete;
  BackgroundHasher& operator=(const BackgroundHasher&) = delete;

  // Hashes `block` after every block added before it.
  void Add(std::string block);
  // The tag of every block added, in order (waits for the hasher). Once.
  std::string Finish();

 private:
  void Run();
  void StopAndJoin();

  Recycle recycle_;
  TagHasher hasher_;       // the thread's alone while it runs
  int blocks_ = 0;         // blocks added, counted up to 2 (the thread starts at the second)
  bool threaded_ = false;  // false: every block is hashed in line
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  bool done_ = false;  // no more blocks come (finished or given up)
  bool stop_ = false;  // given up: drop what is queued
  std::thread thread_;
};

}  // namespace agentd
