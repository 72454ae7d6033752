#include <catch2/catch.hpp>

#include "server/url.h"

using namespace agentd;

TEST_CASE("targets split into a decoded path and ordered query", "[url]") {
  auto t = ParseTarget("/v1/fs/file?path=%2Ftmp%2Fa%20b&start_line=2&flag");
  REQUIRE(t.ok());
  CHECK(t->path == "/v1/fs/file");
  REQUIRE(t->query.size() == 3);
  CHECK(t->query[0] == std::make_pair(std::string("path"), std::string("/tmp/a b")));
  CHECK(t->query[2].first == "flag");
  CHECK(t->query[2].second.empty());
}

TEST_CASE("targets with malformed escapes or no leading slash are refused", "[url]") {
  Result<ParsedTarget> bad = ParseTarget("/x?path=%zz");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().details().Find("field")->as_string() == "path");
  CHECK_FALSE(ParseTarget("/x%2").ok());
  CHECK_FALSE(ParseTarget("http://host/x").ok());
  CHECK_FALSE(ParseTarget("").ok());
}
