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
  h.extra.Set("limits", "cgroup2");
  auto back = DecodeHealthResponse(EncodeHealthResponse(h));
  REQUIRE(back.ok());
  CHECK(back->busy);
  CHECK(back->execs == 3);
  CHECK(back->runtimes == h.runtimes);
  CHECK(back->runtimes_unavailable == h.runtimes_unavailable);
  CHECK(back->extra.Find("limits")->as_string() == "cgroup2");
}
