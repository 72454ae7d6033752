#include "search/line_matcher.h"

#include <algorithm>
#include <random>
#include <string>

#include <catch2/catch.hpp>

using namespace agentd;

namespace {

struct Found {
  std::string line;
  size_t column;
};

std::vector<Found> All(const char* pattern, std::string_view buf, LineMatcherOptions o = {}) {
  auto m = LineMatcher::Compile(pattern, o);
  REQUIRE(m.ok());
  LineMatcher::Scratch s(**m);
  std::vector<Found> out;
  size_t pos = 0;
  for (;;) {
    auto hit = (*m)->NextLine(buf, pos, s);
    REQUIRE(hit.ok());
    if (!*hit) break;
    out.push_back(
        {std::string(buf.substr((*hit)->line_start, (*hit)->line_end - (*hit)->line_start)),
         (*hit)->column});
    pos = (*hit)->line_end + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("each matching line is found once with the offset of its first match") {
  auto f = All("b+", "abb\nxyz\nbab\n");
  REQUIRE(f.size() == 2);
  CHECK(f[0].line == "abb");
  CHECK(f[0].column == 1);
  CHECK(f[1].line == "bab");
  CHECK(f[1].column == 0);
}

TEST_CASE("a match never spans a newline") {
  CHECK(All("a\\sb", "a\nb\n").empty());
  CHECK(All("x[^y]*z", "x\nz\n").empty());
  CHECK(All("a\\sb", "a b\n").size() == 1);
}

TEST_CASE("anchors and lookarounds mean the line") {
  CHECK(All("^b", "a\nb\n").size() == 1);
  CHECK(All("a$", "a\nb\n").size() == 1);
  CHECK(All("\\Ab", "a\nb\n").size() == 1);
  CHECK(All("a\\z", "a\nab\n").size() == 1);
  CHECK(All("(?<!x)b", "xb\nb\n").size() == 1);
}

TEST_CASE("a fixed pattern is a literal and case folding is asked for") {
  CHECK(All("a.c", "abc\n", {.fixed = true}).empty());
  CHECK(All("a.c", "a.c\n", {.fixed = true}).size() == 1);
  CHECK(All("HELLO", "hello\n").empty());
  CHECK(All("HELLO", "hello\n", {.ignore_case = true}).size() == 1);
}

TEST_CASE("invalid UTF-8 in the text does not stop matching") {
  auto f = All("caf.", "\xff\xfe caf\xc3\xa9\n");
  REQUIRE(f.size() == 1);
  CHECK(f[0].column == 3);
}

TEST_CASE("a pattern that does not compile is refused naming the offset") {
  auto m = LineMatcher::Compile("a(b", {});
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().code() == ErrorCode::kInvalidRequest);
  CHECK(m.status().ToString().find("pattern") != std::string::npos);
}

TEST_CASE("an empty line matches an empty-line pattern") {
  auto f = All("^$", "a\n\nb\n");
  REQUIRE(f.size() == 1);
  CHECK(f[0].line.empty());
}

TEST_CASE("the matcher counts the newlines up to each matching line, whichever way it searches") {
  // The required-literal pass counts as it skips; the whole-buffer and
  // line-by-line searches count after. Each count must be the newlines
  // between where the search started and the line found (or the end).
  std::mt19937 rng(22);
  const char* patterns[] = {"conf_[a-z]+_\\d{3}\\b", "x[a-z]y", "(?<!q)conf_ab", "conf_"};
  for (int k = 0; k < 8; ++k) {
    const char* pattern = patterns[k / 2];
    LineMatcherOptions o;
    o.prefilter = k % 2 == 0;  // without: no literal to skip by
    auto m = LineMatcher::Compile(pattern, o);
    REQUIRE(m.ok());
    LineMatcher::Scratch s(**m);
    for (int round = 0; round < 300; ++round) {
      std::string buf;
      size_t lines = rng() % 400;
      for (size_t i = 0; i < lines; ++i) {
        switch (rng() % 6) {
          case 0:
            buf += "a conf_ab_123 z";
            break;
          case 1:
            buf += "conf_ but not";
            break;
          case 2:
            buf += "xqy";
            break;
          case 3:
            buf += std::string(rng() % 200, 'k');
            break;
          default:
            buf += "plain text";
            break;
        }
        if (i + 1 < lines || rng() % 2) buf += '\n';
      }
      size_t pos = 0;
      while (pos < buf.size()) {
        uint64_t counted = 7;  // added to, not set
        auto hit = (*m)->NextLine(buf, pos, s, &counted);
        REQUIRE(hit.ok());
        size_t upto = *hit ? (*hit)->line_start : buf.size();
        INFO("pattern=" << pattern << " prefilter=" << o.prefilter << " from=" << pos);
        REQUIRE(counted ==
                7 + static_cast<uint64_t>(std::count(buf.begin() + pos, buf.begin() + upto, '\n')));
        if (!*hit) break;
        pos = (*hit)->line_end + 1;
      }
    }
  }
}
