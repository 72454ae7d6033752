// OutputMatcher: finds a regular expression in a byte stream that arrives
// in chunks (an exec's output), so that a match split across two chunks
// is found, and found at the same place whatever the chunking: the
// matcher runs PCRE2 with hard partial matching over a window that keeps
// only the text a match may still use (from the start of a begun match,
// plus the pattern's lookbehind), so each byte is scanned about once.
//
// Bounds: the window never holds more than `window_limit` bytes past the
// start of a begun match (a longer match is not found: kWindowFull), and
// the bytes scanned are counted (scanned()) for the caller to bound.
// Not thread-safe; one per wait.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "agentd/protocol/status.h"
#include "search/line_matcher.h"

namespace agentd {

class OutputMatcher {
 public:
  // `matcher` must have been compiled with LineMatcherOptions::partial.
  // The stream is scanned from offset `start`.
  OutputMatcher(std::shared_ptr<const LineMatcher> matcher, uint64_t start, size_t window_limit);

  struct Outcome {
    enum Kind {
      kNeedMore,    // no match in the text so far
      kMatched,     // [match_from, match_to) holds `text`
      kWindowFull,  // a begun match grew past the window limit
    } kind = kNeedMore;
    uint64_t match_from = 0;
    uint64_t match_to = 0;
    std::string text;
  };

  // The stream's bytes at offset `at`. `at` is normally fed_to(); a later
  // offset is a gap (the bytes between were lost) and restarts the window
  // there. `at_end`: no bytes follow (the exec exited), so the end of the
  // text is the end of the stream and `$`, `\d+` and the like may match
  // there. After kMatched or kWindowFull, further feeding is an error.
  Result<Outcome> Feed(uint64_t at, std::string_view bytes, bool at_end);

  // Bytes fed so far end here.
  uint64_t fed_to() const { return fed_to_; }
  // The earliest offset a match may still start at: where a caller that
  // gives up resumes without losing a match.
  uint64_t resume_from() const { return scan_at_; }
  // The window's bytes handed to PCRE2 so far (a partial match is
  // re-scanned with each chunk).
  uint64_t scanned() const { return scanned_; }

 private:
  std::shared_ptr<const LineMatcher> matcher_;
  LineMatcher::Scratch scratch_;
  size_t window_limit_;
  size_t lookbehind_;
  std::string window_;  // stream bytes [window_from_, fed_to_)
  uint64_t window_from_ = 0;
  uint64_t scan_at_ = 0;  // next match attempt starts here
  uint64_t fed_to_ = 0;
  uint64_t scanned_ = 0;
  bool done_ = false;
};

}  // namespace agentd
