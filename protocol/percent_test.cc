#include "agentd/protocol/percent.h"

#include <catch2/catch.hpp>

using namespace agentd;

TEST_CASE("percent encoding round-trips every byte", "[percent]") {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  CHECK(PercentDecode(PercentEncode(all, false), false) == all);
  CHECK(PercentDecode(PercentEncode(all, true), false) == all);
}

TEST_CASE("percent encoding keeps unreserved characters and, if asked, slashes", "[percent]") {
  CHECK(PercentEncode("/a b/", true) == "/a%20b/");
  CHECK(PercentEncode("/a b/", false) == "%2Fa%20b%2F");
  CHECK(PercentEncode("AZaz09-._~", false) == "AZaz09-._~");
  CHECK(PercentEncode("+&=?#%", true) == "%2B%26%3D%3F%23%25");
  CHECK(PercentEncode(std::string("\0\xff", 2), true) == "%00%FF");
}

TEST_CASE("percent decoding: either case, plus as space only in queries", "[percent]") {
  CHECK(PercentDecode("%2f%2F", false) == "//");
  CHECK(PercentDecode("a+b", true) == "a b");
  CHECK(PercentDecode("a+b", false) == "a+b");
  CHECK(PercentDecode("%00", false) == std::string(1, '\0'));
}

TEST_CASE("percent decoding refuses a percent without two hex digits", "[percent]") {
  for (const char* bad : {"%", "%4", "a%zz", "%g0", "%%41"}) {
    INFO(bad);
    CHECK_FALSE(PercentDecode(bad, false));
  }
}
