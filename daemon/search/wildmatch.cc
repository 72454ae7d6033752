#include "search/wildmatch.h"

#include <cctype>
#include <cstring>

namespace agentd {
namespace {

unsigned char Fold(unsigned char c, bool ignore_case) {
  return ignore_case ? static_cast<unsigned char>(std::tolower(c)) : c;
}

bool InClass(std::string_view name, unsigned char c) {
  if (name == "alpha") return std::isalpha(c);
  if (name == "digit") return std::isdigit(c);
  if (name == "alnum") return std::isalnum(c);
  if (name == "space") return std::isspace(c);
  if (name == "upper") return std::isupper(c);
  if (name == "lower") return std::islower(c);
  if (name == "punct") return std::ispunct(c);
  if (name == "xdigit") return std::isxdigit(c);
  if (name == "blank") return c == ' ' || c == '\t';
  if (name == "cntrl") return std::iscntrl(c);
  if (name == "graph") return std::isgraph(c);
  if (name == "print") return std::isprint(c);
  return false;
}

// Matches one character `c` against the set starting at pattern[p] (just
// after '['). Returns the index after the closing ']', or npos when the
// set is unterminated (then '[' is a literal). `*matched` says whether c
// is in the set.
size_t MatchSet(std::string_view pat, size_t p, unsigned char c, bool ignore_case, bool* matched) {
  bool negate = false;
  if (p < pat.size() && (pat[p] == '!' || pat[p] == '^')) {
    negate = true;
    ++p;
  }
  bool hit = false;
  bool first = true;
  unsigned char fc = Fold(c, ignore_case);
  while (p < pat.size()) {
    unsigned char lo = static_cast<unsigned char>(pat[p]);
    if (lo == ']' && !first) {
      *matched = (hit != negate) && c != '/';
      return p + 1;
    }
    first = false;
    if (lo == '[' && p + 1 < pat.size() && pat[p + 1] == ':') {
      size_t end = pat.find(":]", p + 2);
      if (end != std::string_view::npos) {
        std::string_view cls = pat.substr(p + 2, end - p - 2);
        if (InClass(cls, c) ||
            (ignore_case && (InClass(cls, static_cast<unsigned char>(std::tolower(c))) ||
                             InClass(cls, static_cast<unsigned char>(std::toupper(c)))))) {
          hit = true;
        }
        p = end + 2;
        continue;
      }
    }
    if (lo == '\\' && p + 1 < pat.size()) lo = static_cast<unsigned char>(pat[++p]);
    ++p;
    unsigned char hi = lo;
    if (p + 1 < pat.size() && pat[p] == '-' && pat[p + 1] != ']') {
      hi = static_cast<unsigned char>(pat[p + 1]);
      p += 2;
      if (hi == '\\' && p < pat.size()) hi = static_cast<unsigned char>(pat[p++]);
    }
    if ((c >= lo && c <= hi) ||
        (ignore_case && ((fc >= Fold(lo, true) && fc <= Fold(hi, true)) ||
                         (std::toupper(c) >= lo && std::toupper(c) <= hi)))) {
      hit = true;
    }
  }
  return std::string_view::npos;
}

// A "**" that is a whole component: at the start or after '/', and at the
// end or before '/'.
bool IsGlobstar(std::string_view pat, size_t p) {
  return pat.compare(p, 2, "**") == 0 && (p == 0 || pat[p - 1] == '/') &&
         (p + 2 == pat.size() || pat[p + 2] == '/');
}

}  // namespace

// Greedy matching with two backtrack points, as for a single kind of star:
// the last `*` (which may only give back characters up to the next '/')
// and the last `**` (which may give back anything). Linear in practice,
// never exponential.
bool WildMatch(std::string_view pat, std::string_view s, bool ignore_case) {
  size_t p = 0, i = 0;
  size_t star_p = std::string_view::npos, star_i = 0;
  size_t globstar_p = std::string_view::npos, globstar_i = 0;
  while (i < s.size() || p < pat.size()) {
    if (p < pat.size()) {
      char pc = pat[p];
      if (pc == '*' && IsGlobstar(pat, p)) {
        // "**/" matches zero or more whole components; a trailing "**"
        // matches everything left.
        if (p + 2 == pat.size()) return true;
        globstar_p = p + 3;  // after "**/"
        globstar_i = i;
        star_p = std::string_view::npos;
        p += 3;
        continue;
      }
      if (pc == '*') {
        while (p < pat.size() && pat[p] == '*') ++p;  // "a**b" is "a*b"
        star_p = p;
        star_i = i;
        continue;
      }
      if (i < s.size()) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (pc == '?' && c != '/') {
          ++p;
          ++i;
          continue;
        }
        if (pc == '[') {
          bool in = false;
          size_t next = MatchSet(pat, p + 1, c, ignore_case, &in);
          if (next != std::string_view::npos) {
            if (in) {
              p = next;
              ++i;
              continue;
            }
            goto mismatch;
          }
          // An unterminated '[' is a literal.
        }
        unsigned char want = static_cast<unsigned char>(pc);
        size_t width = 1;
        if (pc == '\\' && p + 1 < pat.size()) {
          want = static_cast<unsigned char>(pat[p + 1]);
          width = 2;
        }
        if (pc != '?' && Fold(want, ignore_case) == Fold(c, ignore_case)) {
          p += width;
          ++i;
          continue;
        }
      }
    }
  mismatch:
    // A star takes one more character, unless that would cross a '/'.
    if (star_p != std::string_view::npos && star_i < s.size() && s[star_i] != '/') {
      ++star_i;
      p = star_p;
      i = star_i;
      continue;
    }
    // A globstar takes one more whole component.
    if (globstar_p != std::string_view::npos) {
      size_t slash = s.find('/', globstar_i);
      if (slash == std::string_view::npos) return false;
      globstar_i = slash + 1;
      p = globstar_p;
      i = globstar_i;
      star_p = std::string_view::npos;
      continue;
    }
    return false;
  }
  return true;
}

namespace {

// The index of the '}' closing the '{' at `open`, and whether a top-level
// ',' lies between; npos when unbalanced.
size_t CloseBrace(std::string_view s, size_t open, bool* has_comma) {
  int depth = 0;
  *has_comma = false;
  for (size_t k = open; k < s.size(); ++k) {
    if (s[k] == '\\') {
      ++k;
      continue;
    }
    if (s[k] == '{') ++depth;
    if (s[k] == '}' && --depth == 0) return k;
    if (s[k] == ',' && depth == 1) *has_comma = true;
  }
  return std::string_view::npos;
}

void Expand(std::string_view s, size_t max, std::vector<std::string>& out, bool* too_many) {
  if (*too_many) return;
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k] == '\\') {
      ++k;
      continue;
    }
    if (s[k] != '{') continue;
    bool comma = false;
    size_t close = CloseBrace(s, k, &comma);
    if (close == std::string_view::npos || !comma) continue;
    std::string_view head = s.substr(0, k);
    std::string_view tail = s.substr(close + 1);
    int depth = 0;
    size_t start = k + 1;
    for (size_t j = k + 1; j <= close; ++j) {
      if (s[j] == '\\') {
        ++j;
        continue;
      }
      if (s[j] == '{') ++depth;
      if (s[j] == '}') --depth;
      if ((s[j] == ',' && depth == 0) || j == close) {
        std::string next(head);
        next.append(s.substr(start, j - start));
        next.append(tail);
        Expand(next, max, out, too_many);
        if (*too_many) return;
        start = j + 1;
      }
    }
    return;
  }
  if (out.size() >= max) {
    *too_many = true;
    return;
  }
  out.emplace_back(s);
}

}  // namespace

std::vector<std::string> ExpandBraces(std::string_view pattern, size_t max_patterns,
                                      bool* too_many) {
  std::vector<std::string> out;
  *too_many = false;
  Expand(pattern, max_patterns, out, too_many);
  if (*too_many) out.clear();
  return out;
}

}  // namespace agentd
