#include "agentd/protocol/context.h"

#include <catch2/catch.hpp>

using namespace agentd;

namespace {

json::Value Doc(const std::string& text) {
  Result<json::Value> v = json::Parse(text);
  REQUIRE(v.ok());
  return *v;
}

}  // namespace

TEST_CASE("context create takes a run's options and round-trips", "[context]") {
  Result<ContextCreateRequest> r = DecodeContextCreateRequest(
      Doc(R"({"id": "nb-1", "runtime": "python", "cwd": "/w", "memory_mb": 64,
             "network": "none"})"));
  REQUIRE(r.ok());
  CHECK(r->id == "nb-1");
  CHECK(r->spec.runtime == Runtime::kPython);
  CHECK(r->spec.cwd == "/w");
  CHECK(r->spec.limits.memory_mb == 64);
  Result<ContextCreateRequest> back = DecodeContextCreateRequest(EncodeContextCreateRequest(*r));
  REQUIRE(back.ok());
  CHECK(json::Serialize(EncodeContextCreateRequest(*back)) ==
        json::Serialize(EncodeContextCreateRequest(*r)));
}

TEST_CASE("context create takes python and ts and refuses what belongs to a run", "[context]") {
  for (const char* text : {R"({"id": "a", "runtime": "python", "code": "1"})",
                           R"({"id": "a", "runtime": "python", "timeout_sec": 3})"}) {
    Result<ContextCreateRequest> r = DecodeContextCreateRequest(Doc(text));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kInvalidRequest);
  }
  Result<ContextCreateRequest> shell =
      DecodeContextCreateRequest(Doc(R"({"id": "a", "runtime": "shell"})"));
  REQUIRE_FALSE(shell.ok());
  CHECK(shell.status().message().find("\"python\" or \"ts\"") != std::string::npos);
  Result<ContextCreateRequest> ts =
      DecodeContextCreateRequest(Doc(R"({"id": "a", "runtime": "ts", "cwd": "/w"})"));
  REQUIRE(ts.ok());
  CHECK(ts->spec.runtime == Runtime::kTs);
  CHECK_FALSE(DecodeContextCreateRequest(Doc(R"({"id": "a b", "runtime": "python"})")).ok());
  CHECK_FALSE(DecodeContextCreateRequest(Doc(R"({"runtime": "python"})")).ok());
}

TEST_CASE("context run bounds its code and checks its run_id", "[context]") {
  Result<ContextRunRequest> ok =
      DecodeContextRunRequest(Doc(R"({"code": "x = 1", "run_id": "s-1", "timeout_sec": 5})"));
  REQUIRE(ok.ok());
  CHECK(ok->run_id == "s-1");
  CHECK_FALSE(DecodeContextRunRequest(Doc(R"({"code": "x", "run_id": "a b"})")).ok());
  json::Object big;
  big.Set("code", std::string(kMaxContextCodeBytes + 1, 'x'));
  Result<ContextRunRequest> r = DecodeContextRunRequest(json::Value(std::move(big)));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kPayloadTooLarge);
}

TEST_CASE("context object round-trips with the limit that ended it", "[context]") {
  ContextInfo c;
  c.id = "x";
  c.runtime = "python";
  c.state = "ended";
  c.ended_reason = "limit";
  c.killed_by = "memory";
  c.limit = MemoryHit(64);
  Result<ContextInfo> back = DecodeContextInfo(EncodeContextInfo(c));
  REQUIRE(back.ok());
  CHECK(back->ended_reason == "limit");
  CHECK(back->limit->value == 64);
}
