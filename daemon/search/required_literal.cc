#include "search/required_literal.h"

#include <cctype>

namespace agentd {
namespace {

bool IsQuantifier(char c) { return c == '?' || c == '*' || c == '+' || c == '{'; }

// A byte that stands for itself outside a class. Non-ASCII bytes are left
// out: a quantifier after a multi-byte character applies to all its bytes.
bool IsPlainLiteral(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x80 || u < 0x20) return false;
  return std::string_view("\\^$.[]|()?*+{}").find(c) == std::string_view::npos;
}

// Index just past the class that starts at `i` (pattern[i] == '['), or
// npos when it does not close.
size_t SkipClass(std::string_view p, size_t i) {
  size_t j = i + 1;
  if (j < p.size() && p[j] == '^') ++j;
  if (j < p.size() && p[j] == ']') ++j;  // a leading ']' is a member
  while (j < p.size()) {
    if (p[j] == '\\') {
      j += 2;
    } else if (p[j] == '[' && j + 1 < p.size() && p[j + 1] == ':') {
      size_t end = p.find(":]", j + 2);
      if (end == std::string_view::npos) return std::string_view::npos;
      j = end + 2;
    } else if (p[j] == ']') {
      return j + 1;
    } else {
      ++j;
    }
  }
  return std::string_view::npos;
}

}  // namespace

std::string RequiredLiteral(std::string_view p, bool fixed, bool ignore_case) {
  if (ignore_case) return "";
  if (fixed) return p.find('\n') == std::string_view::npos ? std::string(p) : "";
  // Alternation anywhere, inline options, quoting and verbs: no literal.
  for (std::string_view s : {"(?", "(*", "\\Q"}) {
    if (p.find(s) != std::string_view::npos) return "";
  }
  std::string best, run;
  auto end_run = [&] {
    if (run.size() > best.size()) best = run;
    run.clear();
  };
  int depth = 0;
  size_t i = 0;
  while (i < p.size()) {
    char c = p[i];
    if (c == '|') return "";  // an alternative may avoid any literal
    if (c == '[') {
      end_run();
      i = SkipClass(p, i);
      if (i == std::string_view::npos) return "";
      continue;
    }
    if (c == '(') {
      // A group may be optional or repeated as a whole: its literals are
      // not counted, and a run never continues across it.
      end_run();
      ++depth;
      ++i;
      continue;
    }
    if (c == ')') {
      end_run();
      if (depth > 0) --depth;
      ++i;
      continue;
    }
    char literal = 0;
    size_t width = 1;
    if (c == '{') {
      // A counted repeat's body ({2,3}) is not text; a '{' that is not a
      // repeat is literal to PCRE2, and skipping it only loses a literal.
      end_run();
      size_t close = p.find('}', i);
      i = close == std::string_view::npos ? p.size() : close + 1;
      continue;
    }
    if (c == '\\') {
      if (i + 1 >= p.size()) return "";
      auto e = static_cast<unsigned char>(p[i + 1]);
      width = 2;
      // An escaped ASCII punctuation byte stands for itself; \d, \b, \x41,
      // \1, \n ... are classes, assertions, codes and references.
      if (e >= 0x20 && e < 0x80 && !std::isalnum(e)) literal = static_cast<char>(e);
    } else if (IsPlainLiteral(c)) {
      literal = c;
    }
    size_t next = i + width;
    bool quantified = next < p.size() && IsQuantifier(p[next]);
    if (literal == 0 || depth > 0) {
      end_run();
    } else if (quantified && p[next] != '+') {
      // x? x* x{0,n}: x may be absent; what came before still counts.
      end_run();
    } else {
      // x+ keeps x (it is there); the '+' itself then ends the run, as
      // what follows may come after more x's.
      run.push_back(literal);
    }
    i = next;
  }
  end_run();
  return best;
}

}  // namespace agentd
