#include "search/required_literal.h"

#include <catch2/catch.hpp>
#include <random>

#include "search/line_matcher.h"

using namespace agentd;

TEST_CASE("the longest run every match must contain is the required literal") {
  CHECK(RequiredLiteral("conf_[a-z]+_\\d{3}\\b", false, false) == "conf_");
  CHECK(RequiredLiteral("error: .* timed out", false, false) == " timed out");
  CHECK(RequiredLiteral("a\\.b\\(c", false, false) == "a.b(c");
  CHECK(RequiredLiteral("^fn main", false, false) == "fn main");
}

TEST_CASE("an optional or repeated byte ends the run without joining across it") {
  CHECK(RequiredLiteral("abcd?ef", false, false) == "abc");
  CHECK(RequiredLiteral("abcd*ef", false, false) == "abc");
  CHECK(RequiredLiteral("abcd{0,2}ef", false, false) == "abc");
  CHECK(RequiredLiteral("ab+cdef", false, false) == "cdef");
  CHECK(RequiredLiteral("xy{2,3}", false, false) == "x");
}

TEST_CASE("what the reader does not fully understand gives no literal") {
  CHECK(RequiredLiteral("needle|haystack", false, false).empty());
  CHECK(RequiredLiteral("(?i)needle", false, false).empty());
  CHECK(RequiredLiteral("\\Qa.b\\E", false, false).empty());
  CHECK(RequiredLiteral("(*UCP)needle", false, false).empty());
  CHECK(RequiredLiteral("needle", false, true).empty());      // ignore_case
  CHECK(RequiredLiteral("(needle)?x", false, false) == "x");  // groups do not count
  CHECK(RequiredLiteral("[|(]abc", false, false) == "abc");   // a class is skipped whole
  CHECK(RequiredLiteral("caf\xc3\xa9+", false, false) == "caf");
}

TEST_CASE("a fixed pattern is its own literal unless it spans lines") {
  CHECK(RequiredLiteral("a.b|c", true, false) == "a.b|c");
  CHECK(RequiredLiteral("a\nb", true, false).empty());
}

namespace {

std::vector<std::pair<size_t, size_t>> Lines(const char* pattern, std::string_view buf,
                                             bool prefilter) {
  LineMatcherOptions o;
  o.prefilter = prefilter;
  auto m = LineMatcher::Compile(pattern, o);
  REQUIRE(m.ok());
  LineMatcher::Scratch s(**m);
  std::vector<std::pair<size_t, size_t>> out;
  size_t pos = 0;
  for (;;) {
    auto hit = (*m)->NextLine(buf, pos, s);
    REQUIRE(hit.ok());
    if (!*hit) break;
    out.emplace_back((*hit)->line_start, (*hit)->column);
    pos = (*hit)->line_end + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("the prefilter finds exactly the lines and columns the plain matcher finds") {
  std::mt19937 rng(20261203);
  const char alphabet[] = "abc_.\n ";
  const char* patterns[] = {"ab",  "a.c",    "ab+c",  "abc?",  "a_[bc]+\\.", "^ab",
                            "bc$", "(ab)?c", "a{2}b", "\\bab", "c\\.a",      "b\\s*a"};
  for (int round = 0; round < 200; ++round) {
    std::string buf;
    for (int i = 0; i < 300; ++i) buf.push_back(alphabet[rng() % (sizeof(alphabet) - 1)]);
    for (const char* p : patterns) {
      INFO("pattern " << p << " round " << round);
      CHECK(Lines(p, buf, true) == Lines(p, buf, false));
    }
  }
}
