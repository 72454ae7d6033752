#include "search/file_scanner.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "agentd/protocol/json.h"
#include "agentd/trees/posix_error.h"
#include "fs/line_scanner.h"

namespace agentd {
namespace {

// Bytes of whole lines kept from one block to the next for `before`
// context; beyond it fewer lines are kept (a bound, not a promise).
constexpr size_t kMaxKeptContextBytes = 1 << 20;

size_t EndOfLine(std::string_view buf, size_t at, size_t limit) {
  const void* nl = std::memchr(buf.data() + at, '\n', limit - at);
  return nl ? static_cast<size_t>(static_cast<const char*>(nl) - buf.data()) : limit;
}

// Where the lines kept for `before` begin: whole lines ending at `limit`
// (a line start), at most `context` of them and about
// kMaxKeptContextBytes.
size_t KeepContext(const char* buf, size_t limit, size_t context) {
  size_t keep = limit;
  for (size_t lines = 0; keep > 0 && lines < context && limit - keep < kMaxKeptContextBytes;
       ++lines) {
    const void* nl = keep > 1 ? ::memrchr(buf, '\n', keep - 1) : nullptr;
    keep = nl ? static_cast<size_t>(static_cast<const char*>(nl) - buf) + 1 : 0;
  }
  return keep;
}

// Reads up to `want` bytes at `off`; fewer only at the end of the file.
Result<size_t> ReadAt(int fd, char* to, size_t want, off_t off, std::string_view path) {
  size_t got = 0;
  while (got < want) {
    ssize_t n = ::pread(fd, to + got, want - got, off + static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return PosixError(errno, "cannot read", std::string(path));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

void AppendContextLine(std::string& out, std::string_view line, size_t max) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  bool cut = false;
  json::AppendQuoted(out, CutLine(line, max, &cut));
}

}  // namespace

std::string_view CutLine(std::string_view line, size_t max, bool* cut) {
  *cut = line.size() > max;
  if (!*cut) return line;
  size_t end = max;
  // Step back over a sequence the cut would split (at most 3 bytes).
  for (size_t back = 0; back < 3 && end > 0; ++back) {
    size_t start = end - back - 1;
    unsigned char c = static_cast<unsigned char>(line[start]);
    if ((c & 0xC0) != 0x80) {  // a lead byte (or ASCII)
      size_t len = json::Utf8SequenceLength(line, start);
      if (len > 0 && start + len > end) end = start;
      break;
    }
  }
  return line.substr(0, end);
}

std::vector<size_t> InvalidUtf8Offsets(std::string_view text, size_t limit) {
  std::vector<size_t> out;
  for (size_t i = 0; i < text.size() && out.size() < limit;) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t len = json::Utf8SequenceLength(text, i);
    if (len == 0) {
      out.push_back(i);
      ++i;
    } else {
      i += len;
    }
  }
  return out;
}

Result<FileScanResult> FileScanner::Scan(int fd, std::string_view path, const Emit& emit,
                                         off_t size, ScanRange range,
                                         const std::string_view* content) {
  FileScanResult result;
  // Made at the first match: most files have none.
  std::string prefix;
  // buf_ only grows (reads never zero-fill it again); len is what it holds.
  // What a file with very long lines made it grow to is given back.
  if (buf_.size() > 4 * kSearchReadBytes) buf_ = std::string();
  size_t len = 0;
  size_t scan_from = 0;     // where the next search starts
  size_t count_pos = 0;     // line numbers are known up to here
  uint64_t count_line = 1;  // the line number at count_pos
  bool eof = false;
  bool first_block = true;
  const bool whole = range.whole();
  off_t off = range.begin;      // where the next read starts
  off_t buf_off = range.begin;  // the file offset of buf_[0]
  bool matched_all = false;     // every line starting before range.end is done
  std::deque<PendingMatch>& pending = pending_;
  pending.clear();
  const size_t context = opts_.context;

  if (range.begin > 0 && context > 0) {
    // The first matches' `before` lines lie before the range: keep them
    // as if the scan had come from there.
    const size_t want = static_cast<size_t>(std::min<off_t>(range.begin, kMaxKeptContextBytes));
    if (buf_.size() < want + kSearchReadBytes) buf_.resize(want + kSearchReadBytes);
    Result<size_t> got = ReadAt(fd, buf_.data(), want, range.begin - want, path);
    if (!got.ok()) return got.status();
    if (*got == want) {
      size_t start = 0;  // past the line the window begins inside
      if (range.begin > static_cast<off_t>(want)) {
        const void* nl = std::memchr(buf_.data(), '\n', want);
        start = nl ? static_cast<size_t>(static_cast<const char*>(nl) - buf_.data()) + 1 : want;
      }
      size_t keep = std::max(start, KeepContext(buf_.data(), want, context));
      std::memmove(buf_.data(), buf_.data() + keep, want - keep);
      len = want - keep;
    }
    scan_from = count_pos = len;
    buf_off = range.begin - static_cast<off_t>(len);
  }

  // Gathers after-lines from [p.next, limit); emits pendings that are done.
  auto feed = [&](size_t limit, bool at_eof) -> bool {
    for (PendingMatch& p : pending) {
      while (p.need > 0 && p.next < limit) {
        size_t end = EndOfLine(std::string_view(buf_.data(), len), p.next, limit);
        if (end == limit && !at_eof) break;  // the line goes on in the next block
        if (!p.first) p.head += ',';
        p.first = false;
        AppendContextLine(p.head, std::string_view(buf_.data() + p.next, end - p.next),
                          opts_.max_line_bytes);
        --p.need;
        p.next = end + 1;
      }
      if (at_eof || p.next >= len + 1) p.need = 0;
    }
    while (!pending.empty() && pending.front().need == 0) {
      pending.front().head += "]}\n";
      if (!emit(pending.front().head)) return false;
      pending.pop_front();
    }
    return true;
  };

  while (!eof) {
    if (std::chrono::steady_clock::now() >= opts_.deadline) {
      result.timed_out = true;
      return result;
    }
    if (opts_.cancel && opts_.cancel->load(std::memory_order_relaxed)) {
      result.stopped = true;
      return result;
    }
    size_t old = len;
    if (buf_.size() < old + kSearchReadBytes) buf_.resize(old + kSearchReadBytes);
    ssize_t n;
    if (content) {
      // The whole file, read by the caller: its one block.
      std::memcpy(buf_.data() + old, content->data(), content->size());
      n = static_cast<ssize_t>(content->size());
      content = nullptr;
    } else {
      do {
        n = whole ? ::read(fd, buf_.data() + old, kSearchReadBytes)
                  : ::pread(fd, buf_.data() + old, kSearchReadBytes, off);
      } while (n < 0 && errno == EINTR);
    }
    if (n < 0) return PosixError(errno, "cannot read", std::string(path));
    len = old + static_cast<size_t>(n);
    off += n;
    eof = n == 0 || (size >= 0 && static_cast<size_t>(n) < kSearchReadBytes && off >= size);
    if (first_block) {
      first_block = false;
      // Binary or not is the file's first block's to say (a later part of
      // a split file has no say).
      if (range.begin == 0 && std::memchr(buf_.data() + old, '\0', len - old)) {
        result.binary = true;
        return result;
      }
    }
    // Whole lines only, unless the file ended.
    size_t limit = len;
    if (!eof) {
      const void* last = ::memrchr(buf_.data() + scan_from, '\n', len - scan_from);
      if (!last) {
        if (len - scan_from > kMaxSearchLineBytes) {
          result.binary = true;
          return result;
        }
        continue;
      }
      limit = static_cast<size_t>(static_cast<const char*>(last) - buf_.data()) + 1;
    }
    if (!feed(limit, eof)) {
      result.stopped = true;
      return result;
    }
    // Lines that start at or after range.end are the next part's.
    size_t match_limit = limit;
    if (range.end >= 0 && !matched_all) {
      match_limit = std::min(limit, static_cast<size_t>(range.end - buf_off));
    }
    std::string_view region(buf_.data(), match_limit);
    while (!matched_all && scan_from < match_limit) {
      // The matcher counts the newlines it passes (in the pass that looks
      // for the pattern's literal), so line numbers start from scan_from.
      if (count_pos < scan_from) {
        count_line += CountNewlines(buf_.data() + count_pos, scan_from - count_pos);
        count_pos = scan_from;
      }
      uint64_t passed = 0;
      Result<std::optional<LineMatcher::LineHit>> hit =
          matcher_->NextLine(region, scan_from, scratch_, &passed);
      if (!hit.ok()) return hit.status();
      count_line += passed;
      if (!*hit) {
        scan_from = count_pos = match_limit;
        break;
      }
      const LineMatcher::LineHit& h = **hit;
      count_pos = h.line_start;
      ++result.matches;
      bool cut = false;
      std::string_view line = region.substr(h.line_start, h.line_end - h.line_start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // CRLF files
      std::string_view text = CutLine(line, opts_.max_line_bytes, &cut);
      if (prefix.empty()) {
        prefix = "{\"type\":\"match\",\"path\":";
        json::AppendQuoted(prefix, path);
        prefix += ",\"line\":";
      }
      PendingMatch p;
      p.head = prefix;
      p.head += std::to_string(count_line);
      p.head += ",\"column\":";
      p.head += std::to_string(h.column + 1);
      p.head += ",\"text\":";
      json::AppendQuoted(p.head, text);
      p.head += cut ? ",\"cut\":true" : ",\"cut\":false";
      std::vector<size_t> bad = InvalidUtf8Offsets(text, kMaxInvalidOffsets);
      if (!bad.empty()) {
        p.head += ",\"invalid_utf8\":[";
        for (size_t k = 0; k < bad.size(); ++k) {
          if (k) p.head += ',';
          p.head += std::to_string(bad[k]);
        }
        p.head += ']';
      }
      if (context > 0) {
        // Up to `context` lines before, from what the buffer holds.
        std::vector<std::string_view> before;
        size_t end = h.line_start;
        while (before.size() < context && end > 0) {
          size_t stop = end - 1;  // the '\n' ending the previous line
          const void* nl = stop > 0 ? ::memrchr(buf_.data(), '\n', stop) : nullptr;
          size_t start =
              nl ? static_cast<size_t>(static_cast<const char*>(nl) - buf_.data()) + 1 : 0;
          before.push_back(std::string_view(buf_.data() + start, stop - start));
          end = start;
        }
        p.head += ",\"before\":[";
        for (size_t k = before.size(); k-- > 0;) {
          AppendContextLine(p.head, before[k], opts_.max_line_bytes);
          if (k) p.head += ',';
        }
        p.head += "],\"after\":[";
        p.need = context;
        p.next = h.line_end + 1;
        pending.push_back(std::move(p));
        if (!feed(limit, eof)) {
          result.stopped = true;
          return result;
        }
      } else {
        p.head += "}\n";
        if (!emit(p.head)) {
          result.stopped = true;
          return result;
        }
      }
      scan_from = h.line_end + 1;
      if (h.line_end < match_limit) {  // past the line's newline
        count_pos = scan_from;
        ++count_line;
      }
    }
    if (!matched_all && range.end >= 0 && buf_off + static_cast<off_t>(scan_from) >= range.end) {
      matched_all = true;
      result.lines = count_line - 1 + CountNewlines(buf_.data() + count_pos, scan_from - count_pos);
    }
    // A part ends once its last match has its `after` lines.
    if (eof || (matched_all && pending.empty())) break;
    // Keep the unfinished line and, for context, whole lines before it.
    size_t keep = context > 0 ? KeepContext(buf_.data(), limit, context) : limit;
    for (PendingMatch& p : pending) keep = std::min(keep, p.next);
    // The kept lines may reach back before the last match's line.
    if (keep >= count_pos) {
      count_line += CountNewlines(buf_.data() + count_pos, keep - count_pos);
      count_pos = 0;
    } else {
      count_pos -= keep;
    }
    std::memmove(buf_.data(), buf_.data() + keep, len - keep);
    len -= keep;
    buf_off += static_cast<off_t>(keep);
    for (PendingMatch& p : pending) p.next -= keep;
    scan_from = limit - keep;
  }
  if (!matched_all)
    result.lines = count_line - 1 + CountNewlines(buf_.data() + count_pos, len - count_pos);
  if (!feed(len, true)) result.stopped = true;
  return result;
}

}  // namespace agentd
