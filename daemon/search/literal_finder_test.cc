#include "search/literal_finder.h"

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

TEST_CASE("the literal finder never reads past the end of the buffer") {
  // The occurrence straddles the end of the view: not found, although the
  // bytes beyond it would complete it.
  std::string text = std::string(100, 'x') + "conf_table";
  std::string_view cut = std::string_view(text).substr(0, 103);
  CHECK(FindLiteral(cut, "xxxconf") == nullptr);
  CHECK(FindLiteral(text, "conf_") == text.data() + 100);
  CHECK(FindLiteral(std::string_view(text).substr(0, 104), "conf_") == nullptr);
}

TEST_CASE("an empty literal is found at the start and a longer one never") {
  CHECK(FindLiteral("abc", "") == std::string_view("abc").data());
  std::string_view hay = "abc";
  CHECK(FindLiteral(hay, "abcd") == nullptr);
}
