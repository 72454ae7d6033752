#include <catch2/catch.hpp>

#include "agentd/protocol/bootstrap.h"

using namespace agentd;

TEST_CASE("bootstrap request round-trips", "[bootstrap]") {
  BootstrapRequest req{"tok-123", {{"A", "1"}, {"B", "two words"}}};
  auto back = DecodeBootstrapRequest(EncodeBootstrapRequest(req));
  REQUIRE(back.ok());
  CHECK(back->token == req.token);
  CHECK(back->env == req.env);
}

TEST_CASE("bootstrap request refuses bad tokens and env names", "[bootstrap]") {
  for (const char* text : {R"({})", R"({"token":""})", R"({"token":"has space"})",
                           R"({"token":"t","env":{"A=B":"x"}})", R"({"token":"t","env":{"":"x"}})",
                           R"({"token":"t","env":{"A":1}})", R"({"token":"t","extra":1})"}) {
    auto doc = json::Parse(text);
    REQUIRE(doc.ok());
    INFO(text);
    CHECK(DecodeBootstrapRequest(*doc).status().code() == ErrorCode::kInvalidRequest);
  }
}

TEST_CASE("health response round-trips, keeping fields it does not know", "[health]") {
  HealthResponse h;
  h.version = "1.2.3";
  h.bootstrapped = true;
  h.busy = true;
  h.execs = 3;
  h.uptime_ms = 99;
  h.runtimes = {"shell", "python"};
  h.runtimes_unavailable = {{"ts", "interpreter_not_found", "bun is not on PATH (/bin)"}};
  h.runtime_self_tests = {{"python", "/usr/bin/python3", "passed", 21},
                          {"shell", "/bin/sh", "pending", std::nullopt}};
  h.extra.Set("limits", "cgroup2");
  auto back = DecodeHealthResponse(EncodeHealthResponse(h));
  REQUIRE(back.ok());
  CHECK(back->busy);
  CHECK(back->execs == 3);
  CHECK(back->runtimes == h.runtimes);
  CHECK(back->runtimes_unavailable == h.runtimes_unavailable);
  CHECK(back->runtime_self_tests == h.runtime_self_tests);
  CHECK(back->extra.Find("limits")->as_string() == "cgroup2");
  CHECK_FALSE(back->reason);
  CHECK_FALSE(back->errno_name);
  CHECK(back->extra.Find("reason") == nullptr);
}

TEST_CASE("a 503 health's reason and errno are fields of their own, not extras", "[health]") {
  HealthResponse h;
  h.status = "state_dir_unwritable";
  h.reason = "the state directory takes no write: Read-only file system";
  h.errno_name = "EROFS";
  json::Value doc = EncodeHealthResponse(h);
  CHECK(doc.as_object().Find("errno")->as_string() == "EROFS");
  auto back = DecodeHealthResponse(doc);
  REQUIRE(back.ok());
  CHECK(back->status == "state_dir_unwritable");
  CHECK(back->reason == h.reason);
  CHECK(back->errno_name == "EROFS");
  CHECK(back->extra.Find("reason") == nullptr);
  CHECK(back->extra.Find("errno") == nullptr);
}
