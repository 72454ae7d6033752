#include <catch2/catch.hpp>

#include <set>

#include "agentd/protocol/status.h"

using namespace agentd;

TEST_CASE("every error code has a unique snake_case name that maps back", "[status]") {
  std::set<std::string_view> names;
  for (ErrorCode code : AllErrorCodes()) {
    std::string_view name = ErrorCodeName(code);
    CHECK(names.insert(name).second);
    for (char c : name) CHECK(((c >= 'a' && c <= 'z') || c == '_'));
    CHECK(ErrorCodeFromName(name) == code);
  }
  CHECK(HttpStatusFor(ErrorCode::kExecReleased) == 410);
  CHECK(HttpStatusFor(ErrorCode::kInsufficientStorage) == 507);
}

TEST_CASE("an error body round-trips code, message and details", "[status]") {
  Status s = Status::Error(ErrorCode::kPayloadTooLarge, "too big").With("limit", 4096);
  std::string body = json::Serialize(ErrorBody(s));
  CHECK(body == R"({"error":{"code":"payload_too_large","message":"too big","limit":4096}})");
  Status back = StatusFromErrorBody(413, body);
  CHECK(back.code() == ErrorCode::kPayloadTooLarge);
  CHECK(back.message() == "too big");
  CHECK(back.http_status() == 413);
  CHECK(back.details().Find("limit")->as_int() == 4096);
}

TEST_CASE("a non-JSON error answer becomes protocol_error with the HTTP status", "[status]") {
  Status s = StatusFromErrorBody(502, "<html>bad gateway</html>");
  CHECK(s.code() == ErrorCode::kProtocolError);
  CHECK(s.http_status() == 502);
}

TEST_CASE("an unknown error code from a newer daemon keeps its name", "[status]") {
  Status s = StatusFromErrorBody(418, R"({"error":{"code":"brand_new","message":"m"}})");
  CHECK(s.code() == ErrorCode::kProtocolError);
  CHECK(s.details().Find("code")->as_string() == "brand_new");
}

TEST_CASE("result carries a value or a status", "[status]") {
  Result<int> good = 7;
  REQUIRE(good.ok());
  CHECK(*good == 7);
  Result<int> bad = Status::InvalidRequest("no");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == ErrorCode::kInvalidRequest);
}
