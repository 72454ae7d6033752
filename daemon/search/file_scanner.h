// FileScanner: finds the matching lines of one open file and encodes each
// as one NDJSON line (docs/PROTOCOL.md, "Search"). Reads in blocks with
// memory bounded by the block size plus the longest line (lines over
// kMaxSearchLineBytes make the file count as binary) plus the context
// lines kept for `before`. A file whose first block holds a NUL byte is
// binary and is not searched. One scanner per thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>

#include "agentd/protocol/status.h"
#include "search/line_matcher.h"

namespace agentd {

inline constexpr size_t kSearchReadBytes = 256 * 1024;
inline constexpr size_t kMaxSearchLineBytes = 16 << 20;
// At most this many byte offsets of invalid UTF-8 are listed per line.
inline constexpr size_t kMaxInvalidOffsets = 32;

struct FileScanOptions {
  size_t context = 0;         // lines before and after each match
  size_t max_line_bytes = 0;  // `text` (and context lines) cut to this
  // Checked before each read block: a 1 GiB file cannot outlast the
  // search's time bound by more than one block.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Also checked before each block: set, the scan ends as if the sink had
  // said stop (another thread ended the search).
  const std::atomic<bool>* cancel = nullptr;
  // A regular file of at least split_min_bytes is scanned as this many
  // parts on as many threads (search/split_scan.h); 1: never split.
  size_t split_parts = 1;
  off_t split_min_bytes = 16 << 20;
};

// The part of a file one Scan covers (search/split_scan.h scans a large
// file as several): matches are looked for in the lines that start in
// [begin, end); their `before` lines may lie before `begin` and their
// `after` lines after `end`. `begin` is a line start; line numbers count
// from it (its line is line 1). The whole file (the default) is read from
// the descriptor's offset with read(2), so it may be a pipe; a part is
// read with pread(2).
struct ScanRange {
  off_t begin = 0;
  off_t end = -1;  // -1: to the end of the file
  bool whole() const { return begin == 0 && end < 0; }
};

// The text of a line as the protocol sends it: cut to `max` bytes on a
// UTF-8 boundary (`*cut` says so) and the byte offsets of invalid UTF-8 in
// what is kept (JSON serialization shows each such byte as U+FFFD).
std::string_view CutLine(std::string_view line, size_t max, bool* cut);
std::vector<size_t> InvalidUtf8Offsets(std::string_view text, size_t limit);

struct FileScanResult {
  uint64_t matches = 0;
  bool binary = false;     // skipped: a NUL byte, or a line too long
  bool stopped = false;    // the sink asked to stop
  bool timed_out = false;  // the deadline passed mid-file
  // The '\n' bytes in the range (to `end`, or to the end of the file),
  // once the scan got there (none of the three above).
  uint64_t lines = 0;
};

class FileScanner {
 public:
  // `emit` gets each match's encoded line (ending in '\n'); false stops.
  using Emit = std::function<bool(std::string_view ndjson_line)>;

  FileScanner(std::shared_ptr<const LineMatcher> matcher, FileScanOptions opts)
      : matcher_(std::move(matcher)), scratch_(*matcher_), opts_(opts) {}

  // Scans `range` of `fd` (ScanRange); `path` is what each match names.
  // `size`, when known (a regular file's st_size, >= 0), saves the read
  // that would only confirm the end: a read that fills less than the
  // buffer once the offset reaches `size` is the end (as the file was when
  // stat'ed; a file still growing is read on while reads fill the buffer).
  // Errors: reads that fail (io_error) and match failures.
  Result<FileScanResult> Scan(int fd, std::string_view path, const Emit& emit, off_t size = -1,
                              ScanRange range = {}) {
    return Scan(fd, path, emit, size, range, nullptr);
  }
  // The same for a whole file already read (`content`, read from offset 0
  // by a read that returned less than asked: the file's end), shorter than
  // kSearchReadBytes: the answer Scan gives on the file.
  Result<FileScanResult> ScanContent(std::string_view content, std::string_view path,
                                     const Emit& emit) {
    return Scan(-1, path, emit, static_cast<off_t>(content.size()), {}, &content);
  }

  const std::shared_ptr<const LineMatcher>& matcher() const { return matcher_; }
  const FileScanOptions& options() const { return opts_; }

 private:
  Result<FileScanResult> Scan(int fd, std::string_view path, const Emit& emit, off_t size,
                              ScanRange range, const std::string_view* content);

  std::shared_ptr<const LineMatcher> matcher_;
  LineMatcher::Scratch scratch_;
  FileScanOptions opts_;
  std::string buf_;
  // Matches whose `after` lines are still being gathered; a member so that
  // a file without context costs no allocation (std::deque allocates when
  // made).
  struct PendingMatch {
    std::string head;  // the encoded object up to and including "after":[
    size_t need = 0;   // after lines still wanted
    size_t next = 0;   // where the next after line starts in the buffer
    bool first = true;
  };
  std::deque<PendingMatch> pending_;
};

}  // namespace agentd
