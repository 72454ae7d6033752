#include "search/search_tally.h"

#include "agentd/protocol/json.h"

namespace agentd {
namespace {

// Answer bytes gathered before they are handed on, and the longest a
// gathered line waits (so a slow search still streams).
constexpr size_t kSearchBlockBytes = 64 * 1024;
constexpr auto kSearchFlushEvery = std::chrono::milliseconds(100);

}  // namespace

bool SearchTally::Bound(const char* name) {
  sum_.truncated = true;
  sum_.bound = name;
  return false;
}

bool SearchTally::InTime() { return Clock::now() < deadline_ || Bound("time"); }

bool SearchTally::Unreadable(uint64_t n) {
  sum_.unreadable += n;
  return true;
}

bool SearchTally::FileStart() {
  ++sum_.files_scanned;
  return true;
}

bool SearchTally::Match(std::string_view line) {
  if (sum_.matches >= max_results_) return Bound("results");
  if (sent_bytes_ + line.size() > max_bytes_) return Bound("bytes");
  ++sum_.matches;
  sent_bytes_ += line.size();
  block_.append(line);
  if (block_.size() >= kSearchBlockBytes) Flush();
  return !gone_;
}

bool SearchTally::FileEnd(FileOutcome outcome) {
  switch (outcome) {
    case FileOutcome::kUnreadable:
      ++sum_.unreadable;
      return true;
    case FileOutcome::kBinary:
      --sum_.files_scanned;
      ++sum_.binary_skipped;
      break;
    case FileOutcome::kTimedOut:
      return Bound("time");
    case FileOutcome::kDone:
      break;
  }
  if (!InTime()) return false;
  FlushIfDue();
  return !gone_;
}

void SearchTally::FlushIfDue() {
  if (!block_.empty() && Clock::now() - last_flush_ >= kSearchFlushEvery) Flush();
}

void SearchTally::Flush() {
  if (block_.empty() || gone_) return;
  last_flush_ = Clock::now();
  if (!out_(std::move(block_))) gone_ = true;
  block_ = spare_ ? spare_() : std::string();
  block_.clear();
  // Made at its size at once, not doubled up to it (copies, fresh pages).
  block_.reserve(kSearchBlockBytes + kSearchBlockBytes / 4);
}

SearchSummary SearchTally::Finish() {
  sum_.elapsed_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_).count());
  json::AppendSerialized(block_, EncodeSearchSummary(sum_));
  block_ += '\n';
  Flush();
  return sum_;
}

}  // namespace agentd
