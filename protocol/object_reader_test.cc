#include <catch2/catch.hpp>

#include "agentd/protocol/object_reader.h"
#include "json_doc_for_test.h"

using namespace agentd;

TEST_CASE("object reader returns typed members", "[object_reader]") {
  json::Value doc = Doc(R"({"s":"x","i":5,"b":true,"a":["p","q"],"m":{"K":"V","U":null}})");
  ObjectReader r(doc);
  CHECK(r.String("s") == "x");
  CHECK(r.Int("i", 0, 10) == 5);
  CHECK(r.Bool("b") == true);
  CHECK(r.StringArray("a") == std::vector<std::string>{"p", "q"});
  auto m = r.StringMap("m", true);
  REQUIRE(m);
  CHECK(m->size() == 2);
  CHECK_FALSE((*m)[1].second.has_value());
  CHECK(r.Finish().ok());
}

TEST_CASE("object reader names the field of a type error", "[object_reader]") {
  json::Value doc = Doc(R"({"timeout_sec":"soon"})");
  ObjectReader r(doc);
  CHECK_FALSE(r.Int("timeout_sec", 0, 100));
  Status s = r.Finish();
  CHECK(s.code() == ErrorCode::kInvalidRequest);
  CHECK(s.details().Find("field")->as_string() == "timeout_sec");
}

TEST_CASE("object reader refuses out-of-range and huge numbers", "[object_reader]") {
  for (const char* text : {R"({"n":-1})", R"({"n":101})", R"({"n":1e300})",
                           R"({"n":18446744073709551615})", R"({"n":1.5})"}) {
    json::Value doc = Doc(text);
    ObjectReader r(doc);
    r.Int("n", 0, 100);
    INFO(text);
    CHECK(r.Finish().code() == ErrorCode::kInvalidRequest);
  }
}

TEST_CASE("object reader refuses unknown fields by name", "[object_reader]") {
  json::Value doc = Doc(R"({"known":1,"timeout":30})");
  ObjectReader r(doc);
  r.Int("known", 0, 10);
  Status s = r.Finish();
  CHECK(s.code() == ErrorCode::kInvalidRequest);
  CHECK(s.details().Find("field")->as_string() == "timeout");
}

TEST_CASE("object reader refuses a document that is not an object", "[object_reader]") {
  json::Value doc = Doc("[1]");
  ObjectReader r(doc);
  r.String("x");
  CHECK(r.Finish().code() == ErrorCode::kInvalidRequest);
}

TEST_CASE("object reader reports a missing required member", "[object_reader]") {
  json::Value doc = Doc("{}");
  ObjectReader r(doc);
  r.Require("token", r.String("token").has_value());
  Status s = r.Finish();
  CHECK(s.code() == ErrorCode::kInvalidRequest);
  CHECK(s.details().Find("field")->as_string() == "token");
}
