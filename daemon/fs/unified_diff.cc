#include "fs/unified_diff.h"

#include <algorithm>
#include <vector>

#include "fs/text_edit.h"

namespace agentd {
namespace {

using Lines = std::vector<std::string_view>;

// One line of the edit script: ' ' kept, '-' removed, '+' added.
struct Op {
  char kind;
  std::string_view line;
};

// Myers' O(ND) shortest edit script between a and b, appended to `out`;
// false (nothing appended) when it needs more than kDiffMaxSearch steps.
bool ShortestScript(const Lines& a, const Lines& b, std::vector<Op>& out) {
  const long n = static_cast<long>(a.size());
  const long m = static_cast<long>(b.size());
  const long max = std::min<long>(n + m, static_cast<long>(kDiffMaxSearch));
  const long offset = max + 1;
  std::vector<long> v(static_cast<size_t>(2 * max + 3), 0);
  std::vector<std::vector<long>> trace;
  for (long d = 0; d <= max; ++d) {
    trace.push_back(v);
    for (long k = -d; k <= d; k += 2) {
      long x = (k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1]))
                   ? v[offset + k + 1]
                   : v[offset + k - 1] + 1;
      long y = x - k;
      while (x < n && y < m && a[x] == b[y]) ++x, ++y;
      v[offset + k] = x;
      if (x >= n && y >= m) {
        // Walk the trace back from (n, m).
        std::vector<Op> rev;
        long cx = n, cy = m;
        for (long dd = d; dd > 0; --dd) {
          const std::vector<long>& pv = trace[dd];
          long ck = cx - cy;
          bool down = ck == -dd || (ck != dd && pv[offset + ck - 1] < pv[offset + ck + 1]);
          long pk = down ? ck + 1 : ck - 1;
          long px = pv[offset + pk];
          long py = px - pk;
          while (cx > px && cy > py) rev.push_back({' ', a[--cx]}), --cy;
          if (down) {
            rev.push_back({'+', b[--cy]});
          } else {
            rev.push_back({'-', a[--cx]});
          }
        }
        while (cx > 0 && cy > 0) rev.push_back({' ', a[--cx]}), --cy;
        out.insert(out.end(), rev.rbegin(), rev.rend());
        return true;
      }
    }
  }
  return false;
}

std::vector<Op> Script(const Lines& a, const Lines& b) {
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre &&
         a[a.size() - 1 - suf] == b[b.size() - 1 - suf]) {
    ++suf;
  }
  std::vector<Op> ops;
  for (size_t i = 0; i < pre; ++i) ops.push_back({' ', a[i]});
  Lines mid_a(a.begin() + static_cast<long>(pre), a.end() - static_cast<long>(suf));
  Lines mid_b(b.begin() + static_cast<long>(pre), b.end() - static_cast<long>(suf));
  if (!ShortestScript(mid_a, mid_b, ops)) {
    for (std::string_view l : mid_a) ops.push_back({'-', l});
    for (std::string_view l : mid_b) ops.push_back({'+', l});
  }
  for (size_t i = a.size() - suf; i < a.size(); ++i) ops.push_back({' ', a[i]});
  return ops;
}

void AppendLine(std::string& out, char kind, std::string_view line) {
  out += kind;
  out.append(line);
  if (!line.ends_with('\n')) out += "\n\\ No newline at end of file\n";
}

std::string Range(size_t start, size_t count) {
  // diff -u: a hunk of no lines names the line before it.
  size_t shown = count == 0 ? start - 1 : start;
  return count == 1 ? std::to_string(shown) : std::to_string(shown) + "," + std::to_string(count);
}

}  // namespace

std::string UnifiedDiff(std::string_view before, std::string_view after, std::string_view path) {
  Lines a = SplitLines(before);
  Lines b = SplitLines(after);
  std::vector<Op> ops = Script(a, b);
  std::string out;
  size_t i = 0;
  while (i < ops.size()) {
    while (i < ops.size() && ops[i].kind == ' ') ++i;
    if (i == ops.size()) break;
    // A hunk: from kDiffContextLines before this change to the end of the
    // last change closer than 2 * kDiffContextLines, plus context.
    size_t begin = i >= kDiffContextLines ? i - kDiffContextLines : 0;
    size_t end = i;
    for (size_t j = i; j < ops.size();) {
      if (ops[j].kind != ' ') {
        end = j + 1;
        ++j;
        continue;
      }
      size_t run = j;
      while (run < ops.size() && ops[run].kind == ' ') ++run;
      if (run == ops.size() || run - j > 2 * kDiffContextLines) break;
      j = run;
    }
    size_t stop = std::min(ops.size(), end + kDiffContextLines);
    size_t a_start = 1, b_start = 1;
    for (size_t j = 0; j < begin; ++j) {
      if (ops[j].kind != '+') ++a_start;
      if (ops[j].kind != '-') ++b_start;
    }
    size_t a_count = 0, b_count = 0;
    for (size_t j = begin; j < stop; ++j) {
      if (ops[j].kind != '+') ++a_count;
      if (ops[j].kind != '-') ++b_count;
    }
    if (out.empty()) {
      out += "--- a" + std::string(path) + "\n+++ b" + std::string(path) + "\n";
    }
    out += "@@ -" + Range(a_start, a_count) + " +" + Range(b_start, b_count) + " @@\n";
    for (size_t j = begin; j < stop; ++j) AppendLine(out, ops[j].kind, ops[j].line);
    i = stop;
  }
  return out;
}

}  // namespace agentd
