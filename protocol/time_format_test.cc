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
  CHECK_FALSE(ParseRfc3339("2026-11-30T00:53:20.007Zx").has_value());
  CHECK_FALSE(ParseRfc3339("2026-11-30T00:53").has_value());
  CHECK_FALSE(ParseRfc3339("").has_value());
  CHECK_FALSE(ParseRfc3339("20261-11-30T00:53:20Z").has_value());
  // Each field as "%Nd" reads it: fewer digits than its width are a value.
  CHECK(ParseRfc3339("2026-11-30T0:53:20Z") == t - milliseconds(7));
}

TEST_CASE("rfc3339 dates are the proleptic Gregorian calendar in UTC on both sides of the epoch",
          "[time]") {
  CHECK(FormatRfc3339(system_clock::from_time_t(0)) == "1970-01-01T00:00:00.000Z");
  CHECK(FormatRfc3339(system_clock::from_time_t(-1)) == "1969-12-31T23:59:59.000Z");
  CHECK(FormatRfc3339(system_clock::from_time_t(0) - milliseconds(1)) ==
        "1969-12-31T23:59:59.999Z");
  CHECK(FormatRfc3339(system_clock::from_time_t(951782400)) == "2000-02-29T00:00:00.000Z");
  CHECK(FormatRfc3339(system_clock::from_time_t(4107542399)) == "2100-02-28T23:59:59.000Z");
  CHECK(ParseRfc3339("2000-02-29T00:00:00Z") == system_clock::from_time_t(951782400));
  CHECK(ParseRfc3339("1969-12-31T23:59:59.999Z") == system_clock::from_time_t(0) - milliseconds(1));
  // Fields past their range carry over, as timegm did.
  CHECK(ParseRfc3339("2026-13-01T00:00:00Z") == ParseRfc3339("2027-01-01T00:00:00Z"));
  CHECK(ParseRfc3339("2026-00-31T00:00:00Z") == ParseRfc3339("2025-12-31T00:00:00Z"));
  CHECK(ParseRfc3339("2026-02-30T23:59:60Z") == ParseRfc3339("2026-03-03T00:00:00Z"));
}
