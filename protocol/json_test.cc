#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>

#include "agentd/protocol/json.h"
#include "agentd/protocol/status.h"

using agentd::ErrorCode;
using namespace agentd::json;

TEST_CASE("json round-trips every value type", "[json]") {
  Object inner;
  inner.Set("n", nullptr).Set("b", true).Set("i", -42).Set("d", 1.5).Set("s", "x\ny");
  Object doc;
  doc.Set("inner", inner);
  doc.Set("list", Array{Value(1), Value("two"), Value(Array{}), Value(Object{})});
  std::string text = Serialize(doc);
  auto parsed = Parse(text);
  REQUIRE(parsed.ok());
  CHECK(*parsed == Value(doc));
  CHECK(Serialize(*parsed) == text);
}

TEST_CASE("json keeps 64-bit integers exact and turns larger ones into doubles", "[json]") {
  auto v = Parse("[9223372036854775807, -9223372036854775808, 18446744073709551615]");
  REQUIRE(v.ok());
  CHECK(v->as_array()[0].as_int() == INT64_MAX);
  CHECK(v->as_array()[1].as_int() == INT64_MIN);
  CHECK_FALSE(v->as_array()[2].is_int());
  CHECK(v->as_array()[2].is_number());
}

TEST_CASE("json refuses malformed documents with invalid_json", "[json]") {
  for (const char* bad : {"", "{", "{\"a\":}", "[1,]", "{\"a\":1} x", "nul", "\"\xff\"",
                          "{\"a\":1e999999}", "\"unterminated"}) {
    auto v = Parse(bad);
    INFO(bad);
    REQUIRE_FALSE(v.ok());
    CHECK(v.status().code() == ErrorCode::kInvalidJson);
  }
}

TEST_CASE("json refuses nesting deeper than the limit", "[json]") {
  std::string ok_doc(kMaxJsonDepth - 1, '[');
  ok_doc += std::string(kMaxJsonDepth - 1, ']');
  CHECK(Parse(ok_doc).ok());
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  auto v = Parse(deep);
  REQUIRE_FALSE(v.ok());
  CHECK(v.status().code() == ErrorCode::kInvalidJson);
}

TEST_CASE("json writer escapes control characters and quotes", "[json]") {
  std::string s;
  for (int c = 0; c < 0x20; ++c) s += static_cast<char>(c);
  s += "\"\\\x7f";
  std::string out = Serialize(Value(s));
  for (char c : out) CHECK(static_cast<unsigned char>(c) >= 0x20);
  auto back = Parse(out);
  REQUIRE(back.ok());
  CHECK(back->as_string() == s);
}

TEST_CASE("json writer replaces each invalid UTF-8 byte with U+FFFD", "[json]") {
  CHECK(Serialize(Value(std::string("a\xff"
                                    "b"))) ==
        "\"a\xEF\xBF\xBD"
        "b\"");
  // Overlong encoding of '/', a lone surrogate, a truncated sequence.
  CHECK(Serialize(Value(std::string("\xC0\xAF"))) == "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");
  CHECK(Serialize(Value(std::string("\xED\xA0\x80"))) ==
        "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");
  CHECK(Serialize(Value(std::string("\xE2\x82"))) == "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");
  // Valid multi-byte text passes through untouched.
  CHECK(Serialize(Value(std::string("\xE2\x82\xAC \xF0\x9F\x98\x80"))) ==
        "\"\xE2\x82\xAC \xF0\x9F\x98\x80\"");
}

TEST_CASE("json canonical form ignores key order and whitespace", "[json]") {
  auto a = Parse("{\"b\": 1, \"a\": {\"y\": [1, 2], \"x\": null}}");
  auto b = Parse("{\"a\":{\"x\":null,\"y\":[1,2]},\"b\":1}");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(Canonical(*a) == Canonical(*b));
  auto c = Parse("{\"a\":{\"x\":null,\"y\":[2,1]},\"b\":1}");
  CHECK(Canonical(*a) != Canonical(*c));
}

TEST_CASE("json repeated keys keep the last value", "[json]") {
  auto v = Parse("{\"a\":1,\"a\":2}");
  REQUIRE(v.ok());
  CHECK(v->as_object().size() == 1);
  CHECK(v->Find("a")->as_int() == 2);
}

TEST_CASE("json writes doubles in the fewest digits that read back exactly", "[json]") {
  for (double d : {0.1, 1.5, -2.25, 1e21, 123456.789, 0.30000000000000004, 1.0 / 3.0, 5e-324,
                   1.7976931348623157e308}) {
    std::string text = Serialize(Value(d));
    CHECK(std::strtod(text.c_str(), nullptr) == d);
  }
  CHECK(Serialize(Value(0.1)) == "0.1");
  CHECK(Serialize(Value(1.5)) == "1.5");
  CHECK(Serialize(Value(0.30000000000000004)) == "0.30000000000000004");
  CHECK(Serialize(Value(std::nan(""))) == "null");
}
