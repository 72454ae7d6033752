#include "api/query_reader.h"

#include <catch2/catch.hpp>

using namespace agentd;

TEST_CASE("query reader: known parameters, booleans, and refusal of unknown ones", "[query]") {
  QueryParams q{{"path", "/a"}, {"follow", "1"}, {"recursive", "false"}};
  QueryReader r(q);
  REQUIRE(r.Required("path"));
  CHECK(*r.String("path") == "/a");
  CHECK(r.Bool("follow", false));
  CHECK_FALSE(r.Bool("recursive", true));
  CHECK(r.Bool("absent", true));
  CHECK(r.Finish().ok());

  QueryParams typo{{"path", "/a"}, {"recursiv", "1"}};
  QueryReader t(typo);
  t.Required("path");
  t.Bool("recursive", false);
  Status s = t.Finish();
  CHECK(s.code() == ErrorCode::kInvalidRequest);
  CHECK(s.details().Find("field")->as_string() == "recursiv");

  QueryParams bad{{"follow", "yes"}};
  QueryReader b(bad);
  b.Required("path");
  b.Bool("follow", false);
  CHECK(b.Finish().details().Find("field")->as_string() == "path");
}
