#include <catch2/catch.hpp>

#include "agentd/protocol/time_format.h"

using namespace agentd;
using namespace std::chrono;

TEST_CASE("rfc3339 timestamps are UTC with milliseconds and round-trip", "[time]") {
  system_clock::time_point t = system_clock::from_time_t(1796000000) + milliseconds(7);
  std::string s = FormatRfc3339(t);
  CHECK(s == "2026-11-30T00:53:20.007Z");
  CHECK(ParseRfc3339(s) == t);
  CHECK(ParseRfc3339("2026-11-30T00:53:20Z") == t - milliseconds(7));
  CHECK_FALSE(ParseRfc3339("2026-11-30 01:33:20").has_value());
}
