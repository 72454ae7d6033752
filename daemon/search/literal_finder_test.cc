#include "search/literal_finder.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

#include <catch2/catch.hpp>

using namespace agentd;

namespace {

const char* Memmem(std::string_view hay, std::string_view needle) {
  return static_cast<const char*>(::memmem(hay.data(), hay.size(), needle.data(), needle.size()));
}

}  // namespace

TEST_CASE("the literal finder finds the first occurrence memmem finds, at every length") {
  std::mt19937 rng(22);
  // A small alphabet makes near misses (first and last byte agree, the
  // middle does not) and overlapping occurrences common.
  auto random_text = [&](size_t n) {
    std::string s(n, 'a');
    for (char& c : s) c = "abc_"[rng() % 4];
    return s;
  };
  for (int round = 0; round < 20000; ++round) {
    std::string hay = random_text(rng() % 80);
    std::string needle = random_text(1 + rng() % 6);
    for (size_t from = 0; from <= hay.size(); from += 1 + rng() % 7) {
      std::string_view h = std::string_view(hay).substr(from);
      INFO("hay=" << h << " needle=" << needle);
      REQUIRE(FindLiteral(h, needle) == Memmem(h, needle));
    }
  }
}

TEST_CASE("every comparison width finds what memmem finds, across its blocks") {
  // Texts long enough for the 64- and 32-position AVX2 steps and the
  // 16-position SSE2 step, then the memmem tail; occurrences land on and
  // across every block edge. A width the CPU lacks falls back to a
  // narrower one (still checked against memmem).
  std::mt19937 rng(2026);
  auto random_text = [&](size_t n) {
    std::string s(n, 'a');
    for (char& c : s) c = "abc_"[rng() % 4];
    return s;
  };
  for (LiteralScan scan : {LiteralScan::kBytes, LiteralScan::kSse2, LiteralScan::kAvx2}) {
    for (int round = 0; round < 3000; ++round) {
      std::string hay = random_text(rng() % 300);
      std::string needle = random_text(2 + rng() % 7);
      // Mostly absent from the text but for one planted copy, so the scan
      // runs through many blocks before it is found.
      for (char& c : hay) c = c == needle[0] ? 'x' : c;
      size_t at = hay.empty() ? 0 : rng() % hay.size();
      if (rng() % 2 && at + needle.size() <= hay.size()) hay.replace(at, needle.size(), needle);
      for (size_t from = 0; from <= hay.size(); from += 1 + rng() % 29) {
        std::string_view h = std::string_view(hay).substr(from);
        INFO("width=" << static_cast<int>(scan) << " hay=" << h << " needle=" << needle);
        REQUIRE(FindLiteralWith(h, needle, scan) == Memmem(h, needle));
      }
    }
  }
}

TEST_CASE("the literal finder never reads past the end of the buffer") {
  // The occurrence straddles the end of the view: not found, although the
  // bytes beyond it would complete it.
  std::string text = std::string(100, 'x') + "conf_table";
  std::string_view cut = std::string_view(text).substr(0, 103);
  CHECK(FindLiteral(cut, "xxxconf") == nullptr);
  CHECK(FindLiteral(text, "conf_") == text.data() + 100);
  CHECK(FindLiteral(std::string_view(text).substr(0, 104), "conf_") == nullptr);
  // The same at the widest step's edge: a literal whose last byte would be
  // the 65th of a 64-position step.
  std::string wide = std::string(200, 'x') + "conf_";
  for (size_t end = 190; end <= wide.size(); ++end) {
    std::string_view v = std::string_view(wide).substr(0, end);
    for (LiteralScan scan : {LiteralScan::kSse2, LiteralScan::kAvx2}) {
      CHECK(FindLiteralWith(v, "conf_", scan) ==
            (end == wide.size() ? wide.data() + 200 : nullptr));
    }
  }
}

TEST_CASE("an empty literal is found at the start and a longer one never") {
  CHECK(FindLiteral("abc", "") == std::string_view("abc").data());
  std::string_view hay = "abc";
  CHECK(FindLiteral(hay, "abcd") == nullptr);
}

TEST_CASE("every comparison width counts the newlines before the occurrence, or all of them") {
  // Newlines land in every position of the 64-, 32- and 16-byte steps and
  // in the tail, on both sides of the occurrence; long texts run the
  // byte counters past the point where they are summed (127 steps).
  std::mt19937 rng(27);
  auto count = [](std::string_view s) {
    return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
  };
  for (LiteralScan scan : {LiteralScan::kBytes, LiteralScan::kSse2, LiteralScan::kAvx2}) {
    for (int round = 0; round < 3000; ++round) {
      size_t n = round % 50 == 0 ? 9000 + rng() % 30000 : rng() % 400;
      std::string hay(n, 'a');
      for (char& c : hay) c = "ab\n_\n"[rng() % 5];
      std::string needle = "conf_";
      needle.resize(1 + rng() % 5);
      if (rng() % 3 && n >= needle.size())
        hay.replace(rng() % (n - needle.size() + 1), needle.size(), needle);
      for (size_t from = 0; from <= hay.size(); from += 1 + rng() % 97) {
        std::string_view h = std::string_view(hay).substr(from);
        size_t lines = 5;  // added to, not set
        const char* hit = FindLiteralWith(h, needle, scan, &lines);
        INFO("width=" << static_cast<int>(scan) << " size=" << h.size() << " needle=" << needle);
        REQUIRE(hit == Memmem(h, needle));
        size_t upto = hit ? static_cast<size_t>(hit - h.data()) : h.size();
        REQUIRE(lines == 5 + count(h.substr(0, upto)));
      }
    }
  }
}
