// SearchTally: the answer of one search as its events are applied in walk
// order (search/scan_events.h): the summary's counts, the bounds on
// results, bytes and time (each named when hit), and the NDJSON handed on
// in blocks. Used by one thread: the one that walks.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "agentd/protocol/search.h"
#include "search/scan_events.h"

namespace agentd {

class SearchTally : public ScanSink {
 public:
  using Clock = std::chrono::steady_clock;
  // `out` receives blocks of whole NDJSON lines; false: the reader is gone.
  using Out = std::function<bool(std::string block)>;
  // A buffer `out` is done with (its contents stale), or an empty string:
  // the next block is gathered in it, so a long answer reuses a few
  // buffers instead of faulting in fresh pages for each block.
  using Spare = std::function<std::string()>;

  SearchTally(uint64_t max_results, uint64_t max_bytes, Clock::time_point started,
              Clock::time_point deadline, Out out, Spare spare = nullptr)
      : max_results_(max_results),
        max_bytes_(max_bytes),
        started_(started),
        deadline_(deadline),
        last_flush_(started),
        out_(std::move(out)),
        spare_(std::move(spare)) {}

  bool Unreadable(uint64_t n) override;
  bool FileStart() override;
  bool Match(std::string_view ndjson_line) override;
  bool FileEnd(FileOutcome outcome) override;

  // Names the bound that ended the search; returns false (stop).
  bool Bound(const char* name);
  // False (and the time bound named) once the deadline passed.
  bool InTime();
  // Hands on what is gathered when it has waited long enough.
  void FlushIfDue();
  bool gone() const { return gone_; }
  const SearchSummary& summary() const { return sum_; }

  // Writes the summary line and hands everything on.
  SearchSummary Finish();

 private:
  void Flush();

  const uint64_t max_results_;
  const uint64_t max_bytes_;
  const Clock::time_point started_;
  const Clock::time_point deadline_;
  Clock::time_point last_flush_;
  Out out_;
  Spare spare_;
  SearchSummary sum_;
  std::string block_;
  uint64_t sent_bytes_ = 0;
  bool gone_ = false;
};

}  // namespace agentd
