// Tombstones: the ids of released exec records, remembered so a late retry
// answers 410 exec_released instead of starting a second process
// (docs/PROTOCOL.md, "Start").
//
// An id is remembered as a 64-bit hash with its release time, for at least
// `keep` (one hour by default). Memory is bounded: ids are grouped in
// one-minute buckets of sorted hashes (8 bytes per id); whole buckets
// expire together; beyond `max_entries` the oldest bucket is forgotten
// early (and a warning logged). A hash collision can only make a never-used
// id look released (probability ~n^2/2^65), never the reverse.
// Persistence: Load() reads an append-only file of (hash, unix ms) records
// and rewrites it without expired entries; Add() appends one record.
// Used only on the io thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/protocol/status.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {

class Tombstones {
 public:
  using Clock = std::chrono::system_clock;

  explicit Tombstones(std::chrono::seconds keep = std::chrono::hours(1),
                      size_t max_entries = 1 << 20);

  // Reads and compacts `path`, then appends to it. Without Load() nothing
  // is persisted (unit tests).
  Status Load(const std::string& path, Clock::time_point now);

  void Add(std::string_view id, Clock::time_point now);
  // Forgets every id, in memory and on disk (a guest reset: the next
  // tenant must not learn which ids the last one used).
  void Clear();
  bool Contains(std::string_view id, Clock::time_point now);
  size_t size() const { return size_; }

  static uint64_t Hash(std::string_view id);

 private:
  struct Bucket {
    int64_t minute;                // release time / 60 s
    std::vector<uint64_t> hashes;  // sorted
  };
  void Insert(uint64_t hash, int64_t unix_ms);
  void Expire(Clock::time_point now);

  std::chrono::seconds keep_;
  size_t max_entries_;
  std::deque<Bucket> buckets_;  // oldest first
  size_t size_ = 0;
  UniqueFd file_;
};

}  // namespace agentd
