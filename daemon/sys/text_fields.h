// Splitting the text of system files (/etc/passwd, /proc/self/mountinfo,
// cgroup files) into fields. Views into the caller's text; no allocation
// beyond the vector. Any thread.
#pragma once

#include <string_view>
#include <vector>

namespace agentd {

// The pieces of `text` between `sep`s: n separators give n + 1 fields,
// empty ones included ("a::b" is "a", "", "b"; "" is one empty field).
inline std::vector<std::string_view> SplitFields(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    size_t end = text.find(sep, start);
    if (end == std::string_view::npos) {
      out.push_back(text.substr(start));
      return out;
    }
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

}  // namespace agentd
