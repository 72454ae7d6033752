#include "search/tree_search.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>

#include "search/file_prefetch.h"
#include "search/file_scanner.h"
#include "search/parallel_scan.h"
#include "search/search_tally.h"

namespace agentd {

Result<SearchSummary> TreeSearch::Run(UniqueFd start_fd, const Out& out, const Spare& spare) {
  using Clock = SearchTally::Clock;
  const Clock::time_point started = Clock::now();
  const Clock::time_point deadline = started + opts_.timeout;
  SearchTally tally(opts_.max_results, opts_.max_bytes, started, deadline, out, spare);
  FileScanOptions scan_opts{opts_.context, opts_.max_line_bytes, deadline};
  // A large file is split across as many threads as scan files of a tree.
  scan_opts.split_parts = std::max<size_t>(1, ScanHelperThreads(opts_.scan_threads));

  struct stat st;
  if (::fstat(start_fd.get(), &st) == 0 && S_ISREG(st.st_mode)) {
    FileScanner scanner(matcher_, scan_opts);
    ScanOpenedFile(scanner, start_fd, display_, tally);
  } else {
    std::string base = display_ == "/" ? "" : display_;
    TreeWalk walk(root_, start_, opts_.walk);
    auto make_scan = [&](const std::atomic<bool>* cancel) -> ParallelScan::FileScan {
      FileScanOptions o = scan_opts;
      o.cancel = cancel;
      auto scanner = std::make_shared<FileScanner>(matcher_, o);
      auto prefetch = std::make_shared<FilePrefetch>(walk, opts_.io_ring);
      return [scanner, prefetch](const FileBatch& b, size_t i, ScanSink& sink) {
        return prefetch->Scan(*scanner, b, i, sink);
      };
    };
    ParallelScan scan(ScanHelperThreads(opts_.scan_threads), make_scan, tally);
    uint64_t unreadable_seen = 0;  // the walk's count, as far as handed over
    bool walk_timed_out = false;
    std::string path;
    auto visit = [&](const WalkEntry& e) -> WalkStep {
      if (Clock::now() >= deadline) {
        walk_timed_out = true;
        return WalkStep::kStop;
      }
      if (e.type == S_IFDIR) return scan.Seal() ? WalkStep::kContinue : WalkStep::kStop;
      if (e.type != S_IFREG) return WalkStep::kContinue;
      if (!opts_.include.empty() &&
          std::none_of(opts_.include.begin(), opts_.include.end(),
                       [&](const std::string& p) { return PathFilterMatches(p, e.walk_path); })) {
        return WalkStep::kContinue;
      }
      path.assign(base);
      path += '/';
      size_t walk_at = path.size();
      path += e.walk_path;
      uint64_t unreadable = walk.counts().unreadable;
      bool go =
          scan.Add(e.dir_fd, e.name, path, walk_at, e.followed_link, unreadable - unreadable_seen);
      unreadable_seen = unreadable;
      return go ? WalkStep::kContinue : WalkStep::kStop;
    };
    Status s = walk.Run(start_fd.get(), visit);
    if (!s.ok()) return s;
    if (walk_timed_out) {
      // What was listed but not applied is not waited for.
      scan.Abort();
      if (!tally.summary().bound) tally.Bound("time");
    } else if (scan.Finish()) {
      tally.Unreadable(walk.counts().unreadable - unreadable_seen);
    }
  }
  SearchSummary sum = tally.Finish();
  if (tally.gone()) return Status::Error(ErrorCode::kIoError, "the client went away");
  return sum;
}

}  // namespace agentd
