// LineRangeScanner: finds the bytes of lines [start, end] (1-based,
// inclusive; docs/PROTOCOL.md, "Files") in a stream fed block by block, so
// a file is never held in memory. A line is everything up to and including
// a '\n'; the bytes after the last '\n' (if any) are one more line. "\r"
// is an ordinary byte, so CRLF lines come back byte-identical.
//
// Newlines are counted 32 bytes at a time (AVX2) where the CPU has it, 16
// (SSE2) on other x86-64; a memchr loop elsewhere. Not thread-safe; one scanner per read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "agentd/protocol/fs.h"

namespace agentd {

class LineRangeScanner {
 public:
  explicit LineRangeScanner(LineRange range) : range_(range) {}

  // Feeds the next block of the stream. Returns the part of `block` that
  // lies inside the range (for streaming filters). After done() is true,
  // further input is not needed.
  std::string_view Feed(std::string_view block);
  // Marks the end of the stream.
  void Finish();

  bool done() const { return end_.has_value(); }
  // True once the first byte is known and no end line was asked for: the
  // range then runs to the end of the stream, which need not be scanned.
  bool open_ended() const { return begin_.has_value() && !range_.end; }
  // The range as stream offsets [begin, end); valid once done(). Equal
  // offsets mean an empty answer (start_line past EOF).
  uint64_t begin() const { return begin_.value_or(end_.value_or(pos_)); }
  uint64_t end() const { return end_.value_or(pos_); }

 private:
  LineRange range_;
  uint64_t newlines_ = 0;  // '\n' seen so far
  uint64_t pos_ = 0;       // stream offset of the next byte fed
  std::optional<uint64_t> begin_;
  std::optional<uint64_t> end_;
};

// The number of '\n' bytes in [p, p + n).
size_t CountNewlines(const char* p, size_t n);
// The same, comparing at most `how` wide (narrower where the build or CPU
// lacks it); tests pin each width.
enum class NewlineCount { kBytes, kSse2, kAvx2 };
size_t CountNewlinesWith(const char* p, size_t n, NewlineCount how);
// The offset of the k-th '\n' (k >= 1) in [p, p + n), or nullopt when
// there are fewer; `*counted` receives how many were seen in that case.
std::optional<size_t> FindNthNewline(const char* p, size_t n, uint64_t k, size_t* counted);

}  // namespace agentd
