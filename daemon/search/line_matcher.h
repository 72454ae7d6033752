// LineMatcher: a compiled PCRE2 pattern (JIT where the CPU has it) that
// finds the lines of a buffer holding a match. Each line is matched on its
// own (a match never spans a newline), in UTF mode that tolerates invalid
// UTF-8 (PCRE2_MATCH_INVALID_UTF: invalid bytes match nothing but `\C`-free
// patterns still run). A compiled pattern is shared between threads; each
// thread matches with its own LineMatcher::Scratch.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "agentd/protocol/status.h"

namespace agentd {

struct LineMatcherOptions {
  bool fixed = false;  // the pattern is a literal
  bool ignore_case = false;
  // Skip by the pattern's required literal (search/required_literal.h);
  // off only to compare answers in tests.
  bool prefilter = true;
  // Also prepares partial matching (Find with partial = true), which the
  // output matcher needs to carry a match across chunks.
  bool partial = false;
};

class LineMatcher {
 public:
  // Errors: invalid_request naming field "pattern" with PCRE2's message
  // and the offset in the pattern.
  static Result<std::shared_ptr<const LineMatcher>> Compile(std::string_view pattern,
                                                            LineMatcherOptions opts);
  ~LineMatcher();

  class Scratch {
   public:
    explicit Scratch(const LineMatcher& m);
    ~Scratch();
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;

   private:
    friend class LineMatcher;
    void* match_data_;
  };

  // The first matching line at or after `from` in `buf` (lines end at
  // '\n'; the last may not): its start and end (without the newline) and
  // the match's offset in the line. nullopt when no line matches. Errors
  // (match limits hit) are reported as a failed Status.
  // With `newlines`, also adds the '\n' bytes of buf[from, line_start)
  // (of buf[from, end) when no line matches): the line numbers, counted in
  // the pass that looks for the required literal where there is one.
  struct LineHit {
    size_t line_start;
    size_t line_end;
    size_t column;  // byte offset of the match in the line
  };
  Result<std::optional<LineHit>> NextLine(std::string_view buf, size_t from, Scratch& s,
                                          uint64_t* newlines = nullptr) const;

  // The leftmost match starting at or after `from` in all of `buf` (a
  // match may span newlines; `^` and `$` still mean line starts and ends;
  // `buf[0..from)` is seen by lookbehinds). An empty match does not count.
  // With `partial` (needs LineMatcherOptions::partial), the end of `buf`
  // is not the end of the text: a match that could grow, or one that is
  // only begun when `buf` ends, is answered as kPartial with its start
  // (PCRE2_PARTIAL_HARD), so the answer never depends on where the text
  // was cut.
  struct Span {
    enum Kind { kNone, kPartial, kFull } kind = kNone;
    size_t start = 0;
    size_t end = 0;
  };
  Result<Span> Find(std::string_view buf, size_t from, bool partial, Scratch& s) const;
  // How many bytes before a match start the pattern may look at
  // (lookbehinds, \b): what a caller that drops text must keep.
  size_t lookbehind_bytes() const;

 private:
  LineMatcher() = default;
  // Matches within [start, end) only; the offset of the match or npos.
  Result<size_t> MatchIn(std::string_view buf, size_t start, size_t end, Scratch& s) const;

  void* code_ = nullptr;
  // Whole-buffer search finds candidate lines fast; patterns whose meaning
  // changes with what lies beyond the line (\A, \z, lookarounds) are run
  // line by line instead.
  bool per_line_ = false;
  // Every matching line holds this ("" when no literal is certain).
  std::string required_;
};

}  // namespace agentd
