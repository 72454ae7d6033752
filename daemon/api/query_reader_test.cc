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

TEST_CASE("query reader: a parameter given twice is refused by name", "[query]") {
  QueryParams q{{"wait_ms", "10"}, {"wait_ms", "20"}};
  QueryReader r(q);
  CHECK_FALSE(r.Number("wait_ms", 0, 100));
  Status s = r.Finish();
  CHECK(s.code() == ErrorCode::kInvalidRequest);
  CHECK(s.details().Find("field")->as_string() == "wait_ms");
}

TEST_CASE("query reader: numbers in range, with the range named when refused", "[query]") {
  QueryParams q{{"from", "7"}, {"max_bytes", "0"}};
  QueryReader r(q);
  CHECK(r.Number("from", 0, 10) == 7u);
  CHECK_FALSE(r.Number("max_bytes", 1, 10));
  CHECK_FALSE(r.Number("absent", 0, 10));
  Status s = r.Finish();
  CHECK(s.details().Find("field")->as_string() == "max_bytes");
  CHECK(s.details().Find("min")->as_int() == 1);
  CHECK(s.details().Find("max")->as_int() == 10);

  for (const char* bad : {"", "-1", "1x", "0x10", "99999999999999999999"}) {
    QueryParams one{{"from", bad}};
    QueryReader b(one);
    CHECK_FALSE(b.Number("from", 0, INT64_MAX));
    CHECK(b.Finish().details().Find("field")->as_string() == "from");
  }
}

TEST_CASE("query reader: choices", "[query]") {
  QueryParams q{{"until", "exit"}};
  QueryReader r(q);
  CHECK(r.Choice("until", {"output", "exit"}) == "exit");
  CHECK(r.Finish().ok());

  QueryParams bad{{"until", "forever"}};
  QueryReader b(bad);
  CHECK_FALSE(b.Choice("until", {"output", "exit"}));
  Status s = b.Finish();
  CHECK(s.details().Find("field")->as_string() == "until");
  CHECK(s.message().find("output, exit") != std::string::npos);
}

TEST_CASE("query reader: a route without parameters refuses any", "[query]") {
  QueryParams none;
  CHECK(QueryReader(none).Finish().ok());
  QueryParams some{{"wait", "30000"}};
  Status s = QueryReader(some).Finish();
  CHECK(s.code() == ErrorCode::kInvalidRequest);
  CHECK(s.details().Find("field")->as_string() == "wait");
}

TEST_CASE("query reader: the first problem recorded wins", "[query]") {
  QueryParams q{{"offset", "x"}};
  QueryReader r(q);
  CHECK_FALSE(r.Number("offset", 0, 10));
  r.Fail(Status::InvalidRequest("query parameter \"offset\" is required").With("field", "offset"));
  CHECK(r.Finish().message().find("must be an integer") != std::string::npos);
}

TEST_CASE("query reader: a repeatable parameter answers every value in order", "[query]") {
  QueryParams q{{"glob", "*.c"}, {"path", "/w"}, {"glob", "*.h"}};
  QueryReader r(q);
  CHECK(r.Repeated("glob") == std::vector<std::string>{"*.c", "*.h"});
  CHECK(r.Repeated("exclude").empty());
  CHECK(*r.String("path") == "/w");
  CHECK(r.Finish().ok());
  QueryReader once(q);
  once.String("path");
  CHECK_FALSE(once.String("glob"));  // not read as repeatable: refused
  CHECK(once.Finish().details().Find("field")->as_string() == "glob");
}
