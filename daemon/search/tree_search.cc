#include "search/tree_search.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>

#include "agentd/protocol/json.h"
#include "search/file_scanner.h"

namespace agentd {
namespace {

// Answer bytes gathered before they are handed on, and the longest a
// gathered line waits (so a slow search still streams).
constexpr size_t kSearchBlockBytes = 64 * 1024;
constexpr auto kSearchFlushEvery = std::chrono::milliseconds(100);

}  // namespace

Result<SearchSummary> TreeSearch::Run(UniqueFd start_fd, const Out& out) {
  using WalkClock = std::chrono::steady_clock;
  const WalkClock::time_point started = WalkClock::now();
  const WalkClock::time_point deadline = started + opts_.timeout;
  SearchSummary sum;
  std::string block;
  uint64_t sent_bytes = 0;
  bool gone = false;
  WalkClock::time_point last_flush = started;

  auto flush = [&]() {
    if (block.empty() || gone) return;
    last_flush = WalkClock::now();
    if (!out(std::move(block))) gone = true;
    block.clear();
  };
  auto bound = [&](const char* name) {
    sum.truncated = true;
    sum.bound = name;
    return false;
  };
  FileScanner scanner(matcher_, FileScanOptions{opts_.context, opts_.max_line_bytes, deadline});
  FileScanner::Emit emit = [&](std::string_view line) {
    if (sum.matches >= opts_.max_results) return bound("results");
    if (sent_bytes + line.size() > opts_.max_bytes) return bound("bytes");
    ++sum.matches;
    sent_bytes += line.size();
    block.append(line);
    if (block.size() >= kSearchBlockBytes) flush();
    return !gone;
  };
  // false: stop the search.
  auto scan = [&](int fd, const std::string& path) {
    ++sum.files_scanned;
    Result<FileScanResult> r = scanner.Scan(fd, path, emit);
    if (!r.ok()) {
      ++sum.unreadable;
      return true;
    }
    if (r->binary) {
      --sum.files_scanned;
      ++sum.binary_skipped;
    }
    if (r->stopped) return false;
    if (r->timed_out) return bound("time");
    if (WalkClock::now() >= deadline) return bound("time");
    if (!block.empty() && WalkClock::now() - last_flush >= kSearchFlushEvery) flush();
    return !gone;
  };

  struct stat st;
  if (::fstat(start_fd.get(), &st) == 0 && S_ISREG(st.st_mode)) {
    scan(start_fd.get(), display_);
  } else {
    std::string base = display_ == "/" ? "" : display_;
    TreeWalk walk(root_, start_, opts_.walk);
    auto visit = [&](const WalkEntry& e) -> WalkStep {
      if (WalkClock::now() >= deadline) {
        bound("time");
        return WalkStep::kStop;
      }
      if (e.type != S_IFREG) return WalkStep::kContinue;
      if (!opts_.include.empty() &&
          std::none_of(opts_.include.begin(), opts_.include.end(),
                       [&](const std::string& p) { return PathFilterMatches(p, e.walk_path); })) {
        return WalkStep::kContinue;
      }
      // O_NONBLOCK: a FIFO swapped in since the listing must not hang us.
      UniqueFd fd = walk.Open(e, O_RDONLY | O_NONBLOCK);
      struct stat fst;
      if (!fd || ::fstat(fd.get(), &fst) != 0 || !S_ISREG(fst.st_mode)) {
        ++sum.unreadable;
        return WalkStep::kContinue;
      }
      return scan(fd.get(), base + "/" + e.walk_path) ? WalkStep::kContinue : WalkStep::kStop;
    };
    Status s = walk.Run(start_fd.get(), visit);
    if (!s.ok()) return s;
    sum.unreadable += walk.counts().unreadable;
  }
  sum.elapsed_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(WalkClock::now() - started).count());
  json::AppendSerialized(block, EncodeSearchSummary(sum));
  block += '\n';
  flush();
  if (gone) return Status::Error(ErrorCode::kIoError, "the client went away");
  return sum;
}

}  // namespace agentd
