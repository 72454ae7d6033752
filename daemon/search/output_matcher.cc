#include "search/output_matcher.h"

#include <algorithm>

namespace agentd {
namespace {

// The number of bytes at the end of `text` that begin a UTF-8 sequence
// the text cuts short: a match attempt must not move past them, since
// the rest of the character may come with the next chunk.
size_t IncompleteUtf8Tail(std::string_view text) {
  for (size_t back = 1; back <= 3 && back <= text.size(); ++back) {
    auto c = static_cast<unsigned char>(text[text.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

}  // namespace

OutputMatcher::OutputMatcher(std::shared_ptr<const LineMatcher> matcher, uint64_t start,
                             size_t window_limit)
    : matcher_(std::move(matcher)),
      scratch_(*matcher_),
      window_limit_(window_limit),
      lookbehind_(matcher_->lookbehind_bytes()),
      window_from_(start),
      scan_at_(start),
      fed_to_(start) {}

Result<OutputMatcher::Outcome> OutputMatcher::Feed(uint64_t at, std::string_view bytes,
                                                   bool at_end) {
  if (done_) return Status::Internal("output matcher fed after its answer");
  if (at != fed_to_) {
    // A gap: nothing before `at` can be part of a match any more.
    window_.clear();
    window_from_ = scan_at_ = fed_to_ = at;
  }
  window_.append(bytes);
  fed_to_ += bytes.size();
  size_t from = static_cast<size_t>(scan_at_ - window_from_);
  // A character cut by the chunk's end is held back until it is whole
  // (PCRE2 would take it for invalid UTF-8 and give up a begun match).
  size_t held = at_end ? 0 : IncompleteUtf8Tail(window_);
  std::string_view subject(window_.data(), window_.size() - held);
  from = std::min(from, subject.size());
  scanned_ += subject.size() - from;
  Result<LineMatcher::Span> found = matcher_->Find(subject, from, !at_end, scratch_);
  if (!found.ok()) return found.status();
  Outcome out;
  switch (found->kind) {
    case LineMatcher::Span::kFull:
      done_ = true;
      out.kind = Outcome::kMatched;
      out.match_from = window_from_ + found->start;
      out.match_to = window_from_ + found->end;
      out.text = window_.substr(found->start, found->end - found->start);
      scan_at_ = out.match_to;
      return out;
    case LineMatcher::Span::kPartial:
      scan_at_ = window_from_ + found->start;
      break;
    case LineMatcher::Span::kNone:
      scan_at_ = fed_to_ - held;
      break;
  }
  // Keep the text from the begun match on, and what lookbehinds may see.
  uint64_t keep_from = scan_at_ - std::min<uint64_t>(lookbehind_, scan_at_ - window_from_);
  window_.erase(0, static_cast<size_t>(keep_from - window_from_));
  window_from_ = keep_from;
  if (fed_to_ - scan_at_ > window_limit_) {
    done_ = true;
    out.kind = Outcome::kWindowFull;
  }
  return out;
}

}  // namespace agentd
