// TreeSearch: GET /v1/fs/search's engine (docs/PROTOCOL.md, "Search"). Walks
// a directory (search/tree_walk.h) or takes one file, scans each regular
// file (search/file_scanner.h; on other threads while the walk goes on,
// search/parallel_scan.h), and produces the NDJSON answer in walk order
// (search/search_tally.h): one line per matching line, then one summary
// line. Bounded in results, answer bytes and time; the bound that ended it
// is named in the summary.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agentd/protocol/search.h"
#include "agentd/protocol/status.h"
#include "agentd/trees/unique_fd.h"
#include "fs/confined_root.h"
#include "fs/lexical_path.h"
#include "search/line_matcher.h"
#include "search/tree_walk.h"

namespace agentd {

struct SearchOptions {
  WalkOptions walk;
  std::vector<std::string> include;  // files only; none: every file
  size_t context = 0;
  size_t max_line_bytes = 1024;
  uint64_t max_results = 1000;
  uint64_t max_bytes = 16ull << 20;  // NDJSON bytes of the answer
  std::chrono::milliseconds timeout{30000};
  // Threads that scan files while the walk goes on (search/parallel_scan.h):
  // 0, one per CPU (at most 4; none on one CPU); 1, the walking thread
  // scans; n, n threads. A file of FileScanOptions::split_min_bytes or more
  // is scanned in as many parts (search/split_scan.h). The answer is the
  // same for every value.
  size_t scan_threads = 0;
  // Open, stat and read small files a window at a time through io_uring
  // where the kernel offers it (search/file_prefetch.h); false: a system
  // call each. The answer is the same either way.
  bool io_ring = true;
};

class TreeSearch {
 public:
  // `out` receives blocks of whole NDJSON lines; false: the reader is gone.
  using Out = std::function<bool(std::string block)>;

  TreeSearch(const ConfinedRoot& root, RelPath start, std::string display,
             std::shared_ptr<const LineMatcher> matcher, SearchOptions opts)
      : root_(root),
        start_(std::move(start)),
        display_(std::move(display)),
        matcher_(std::move(matcher)),
        opts_(std::move(opts)) {}

  // Searches below (or in) `start_fd` (opened O_RDONLY from start) and
  // writes every line, the summary last. Returns the summary; not ok only
  // when `out` refused (the client is gone).
  // `spare` (optional): a buffer `out` is done with, or an empty string
  // (SearchTally::Spare).
  using Spare = std::function<std::string()>;
  Result<SearchSummary> Run(UniqueFd start_fd, const Out& out, const Spare& spare = nullptr);

 private:
  const ConfinedRoot& root_;
  RelPath start_;
  std::string display_;
  std::shared_ptr<const LineMatcher> matcher_;
  SearchOptions opts_;
};

}  // namespace agentd
