#include "search/line_matcher.h"

#include <pcre2.h>

#include <algorithm>
#include <cstring>

#include "fs/line_scanner.h"
#include "search/literal_finder.h"
#include "search/required_literal.h"

namespace agentd {
namespace {

pcre2_code* Code(void* p) { return static_cast<pcre2_code*>(p); }
pcre2_match_data* Data(void* p) { return static_cast<pcre2_match_data*>(p); }

// Constructs whose result depends on text outside the line the match is
// in; such patterns are matched one line at a time.
bool NeedsPerLine(std::string_view pattern, bool fixed) {
  if (fixed) return false;
  for (std::string_view s : {"\\A", "\\z", "\\Z", "\\G", "(?=", "(?!", "(?<", "(*"}) {
    if (pattern.find(s) != std::string_view::npos) return true;
  }
  return false;
}

// A match that PCRE2 could not finish (a match or depth limit hit).
Status MatchFailed(int rc) {
  PCRE2_UCHAR msg[256];
  pcre2_get_error_message(rc, msg, sizeof(msg));
  return Status::InvalidRequest("pattern cannot be matched: " +
                                std::string(reinterpret_cast<char*>(msg)))
      .With("field", "pattern");
}

}  // namespace

Result<std::shared_ptr<const LineMatcher>> LineMatcher::Compile(std::string_view pattern,
                                                                LineMatcherOptions opts) {
  uint32_t flags = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
  // PCRE2 refuses MULTILINE with LITERAL; a literal has no anchors anyway.
  flags |= opts.fixed ? PCRE2_LITERAL : PCRE2_MULTILINE;
  if (opts.ignore_case) flags |= PCRE2_CASELESS;
  int err = 0;
  PCRE2_SIZE err_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   flags, &err, &err_offset, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    return Status::InvalidRequest("pattern does not compile: " +
                                  std::string(reinterpret_cast<char*>(msg)))
        .With("field", "pattern")
        .With("offset", static_cast<uint64_t>(err_offset));
  }
  // Without JIT support (another CPU) the interpreter runs: slower, same
  // answers.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE | (opts.partial ? PCRE2_JIT_PARTIAL_HARD : 0));
  std::shared_ptr<LineMatcher> m(new LineMatcher());
  m->code_ = code;
  m->per_line_ = NeedsPerLine(pattern, opts.fixed);
  if (opts.prefilter) m->required_ = RequiredLiteral(pattern, opts.fixed, opts.ignore_case);
  return std::shared_ptr<const LineMatcher>(std::move(m));
}

LineMatcher::~LineMatcher() { pcre2_code_free(Code(code_)); }

LineMatcher::Scratch::Scratch(const LineMatcher& m)
    : match_data_(pcre2_match_data_create_from_pattern(Code(m.code_), nullptr)) {}

LineMatcher::Scratch::~Scratch() { pcre2_match_data_free(Data(match_data_)); }

Result<size_t> LineMatcher::MatchIn(std::string_view buf, size_t start, size_t end,
                                    Scratch& s) const {
  int rc = pcre2_match(Code(code_), reinterpret_cast<PCRE2_SPTR>(buf.data() + start), end - start,
                       0, 0, Data(s.match_data_), nullptr);
  if (rc == PCRE2_ERROR_NOMATCH) return std::string_view::npos;
  if (rc < 0) return MatchFailed(rc);
  return static_cast<size_t>(pcre2_get_ovector_pointer(Data(s.match_data_))[0]);
}

Result<LineMatcher::Span> LineMatcher::Find(std::string_view buf, size_t from, bool partial,
                                            Scratch& s) const {
  uint32_t flags = PCRE2_NOTEMPTY | (partial ? PCRE2_PARTIAL_HARD : 0);
  int rc = pcre2_match(Code(code_), reinterpret_cast<PCRE2_SPTR>(buf.data()), buf.size(), from,
                       flags, Data(s.match_data_), nullptr);
  if (rc == PCRE2_ERROR_NOMATCH) return Span{};
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(Data(s.match_data_));
  if (rc == PCRE2_ERROR_PARTIAL) return Span{Span::kPartial, ov[0], ov[1]};
  if (rc < 0) return MatchFailed(rc);
  return Span{Span::kFull, ov[0], ov[1]};
}

size_t LineMatcher::lookbehind_bytes() const {
  uint32_t chars = 0;
  pcre2_pattern_info(Code(code_), PCRE2_INFO_MAXLOOKBEHIND, &chars);
  // Characters, each up to 4 bytes of UTF-8; at least one character for
  // `^` and \b, which look at the byte before a match.
  return 4 * std::max<size_t>(chars, 1);
}

Result<std::optional<LineMatcher::LineHit>> LineMatcher::NextLine(std::string_view buf, size_t from,
                                                                  Scratch& s,
                                                                  uint64_t* newlines) const {
  auto line_end = [&](size_t at) {
    const void* nl = std::memchr(buf.data() + at, '\n', buf.size() - at);
    return nl ? static_cast<size_t>(static_cast<const char*>(nl) - buf.data()) : buf.size();
  };
  // The start of the line holding buf[at], looking back no further than pos.
  auto line_start_of = [&](size_t pos, size_t at) {
    const void* prev = at > pos ? ::memrchr(buf.data() + pos, '\n', at - pos) : nullptr;
    return prev ? static_cast<size_t>(static_cast<const char*>(prev) - buf.data()) + 1 : pos;
  };
  // Newlines of [pos, to), where the literal search did not count them.
  auto count = [&](size_t pos, size_t to) {
    if (newlines) *newlines += CountNewlines(buf.data() + pos, to - pos);
  };
  size_t pos = from;
  while (pos < buf.size()) {
    size_t line_start = pos;
    if (!required_.empty()) {
      // Only a line holding the literal can match: skip to it, counting
      // the newlines passed (none lie between its line's start and it).
      size_t passed = 0;
      const char* lit = FindLiteral(buf.substr(pos), required_, newlines ? &passed : nullptr);
      if (newlines) *newlines += passed;
      if (!lit) return std::optional<LineHit>();
      line_start = line_start_of(pos, lit - buf.data());
    } else if (!per_line_) {
      // Leftmost match anywhere from here; its line is the candidate.
      Result<size_t> at = MatchIn(buf, pos, buf.size(), s);
      if (!at.ok()) return at.status();
      if (*at == std::string_view::npos) {
        count(pos, buf.size());
        return std::optional<LineHit>();
      }
      line_start = line_start_of(pos, pos + *at);
      count(pos, line_start);
    }
    size_t end = line_end(line_start);
    // The line on its own decides (a whole-buffer match may have used the
    // newline, as `\s` or `[^x]` can).
    Result<size_t> in = MatchIn(buf, line_start, end, s);
    if (!in.ok()) return in.status();
    if (*in != std::string_view::npos) return std::optional<LineHit>(LineHit{line_start, end, *in});
    if (end >= buf.size()) break;
    if (newlines) ++*newlines;  // the one ending the line that did not match
    pos = end + 1;
  }
  return std::optional<LineHit>();
}

}  // namespace agentd
