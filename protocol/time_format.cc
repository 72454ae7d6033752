#include "agentd/protocol/time_format.h"

#include <cctype>
#include <cstdint>
#include <cstdio>

namespace agentd {
namespace {

// The calendar is C++20's <chrono> arithmetic and the fields are read by
// hand, not gmtime_r, timegm and sscanf: in the static daemon those link
// glibc's time zone code (tzset reads TZ and /etc/localtime, though UTC
// needs neither), its sscanf, and sscanf's whole scanf engine and float
// parsers, ~100 KB (docs/BUILDING.md, "Binary size").

// One field of the form as sscanf's "%<width>d" read it (leading blanks,
// a sign, then digits, at most `width` characters after the blanks).
bool ReadField(std::string_view s, size_t& pos, int width, int& out) {
  while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos]))) ++pos;
  size_t end =
      pos + static_cast<size_t>(width) < s.size() ? pos + static_cast<size_t>(width) : s.size();
  bool negative = false;
  if (pos < end && (s[pos] == '-' || s[pos] == '+')) {
    negative = s[pos] == '-';
    ++pos;
  }
  int value = 0;
  size_t first = pos;
  for (; pos < end && s[pos] >= '0' && s[pos] <= '9'; ++pos) value = value * 10 + (s[pos] - '0');
  if (pos == first) return false;
  out = negative ? -value : value;
  return true;
}

bool ReadLiteral(std::string_view s, size_t& pos, char c) {
  if (pos >= s.size() || s[pos] != c) return false;
  ++pos;
  return true;
}

}  // namespace

std::string FormatRfc3339(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
  int64_t secs = ms / 1000;
  int millis = static_cast<int>(ms % 1000);
  if (millis < 0) {
    millis += 1000;
    --secs;
  }
  sys_days day = floor<days>(sys_seconds(seconds(secs)));
  year_month_day date(day);
  hh_mm_ss clock(seconds(secs) - day.time_since_epoch());
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ",
                static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                static_cast<unsigned>(date.day()), static_cast<int>(clock.hours().count()),
                static_cast<int>(clock.minutes().count()),
                static_cast<int>(clock.seconds().count()), millis);
  return buf;
}

std::optional<std::chrono::system_clock::time_point> ParseRfc3339(std::string_view s) {
  // Accepts the form FormatRfc3339 writes, with or without milliseconds.
  int y, mo, d, h, mi, sec;
  std::string_view text = s;
  size_t pos = 0;
  if (!ReadField(text, pos, 4, y) || !ReadLiteral(text, pos, '-') || !ReadField(text, pos, 2, mo) ||
      !ReadLiteral(text, pos, '-') || !ReadField(text, pos, 2, d) || !ReadLiteral(text, pos, 'T') ||
      !ReadField(text, pos, 2, h) || !ReadLiteral(text, pos, ':') || !ReadField(text, pos, 2, mi) ||
      !ReadLiteral(text, pos, ':') || !ReadField(text, pos, 2, sec)) {
    return std::nullopt;
  }
  int millis = 0;
  if (pos < text.size() && text[pos] == '.') {
    int digits = 0;
    ++pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits < 3) millis = millis * 10 + (text[pos] - '0');
      ++digits;
      ++pos;
    }
    for (; digits < 3; ++digits) millis *= 10;
  }
  if (pos + 1 != text.size() || text[pos] != 'Z') return std::nullopt;
  // Out-of-range fields carry over as timegm's did (month 13 is January of
  // the next year, second 60 the next minute's first).
  using namespace std::chrono;
  int months = mo - 1;
  int carried_year = y + (months >= 0 ? months / 12 : (months - 11) / 12);
  unsigned carried_month = static_cast<unsigned>(months - (carried_year - y) * 12) + 1;
  sys_days first = year_month_day(year(carried_year), month(carried_month), 1d);
  sys_seconds secs = first + days(d - 1) + hours(h) + minutes(mi) + seconds(sec);
  return system_clock::time_point(secs.time_since_epoch()) + milliseconds(millis);
}

}  // namespace agentd
