#include "api/request_ownership.h"

#include <catch2/catch.hpp>

using namespace agentd;

namespace {
UserDb Db() {
  return {ParsePasswd("root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1001::/home/agent:/bin/sh\n"),
          ParseGroup("root:x:0:\nagents:x:1001:\nstaff:x:50:agent\n")};
}
}  // namespace

TEST_CASE("file ownership: a user brings its primary group, a group alone only the group",
          "[ownership]") {
  auto o = ResolveOwnership(std::string("agent"), std::nullopt, Db());
  REQUIRE(o.ok());
  CHECK((o->uid == 1000u && o->gid == 1001u));
  o = ResolveOwnership(std::string("agent"), std::string("staff"), Db());
  CHECK((o->uid == 1000u && o->gid == 50u));
  o = ResolveOwnership(std::nullopt, std::string("staff"), Db());
  CHECK_FALSE(o->uid.has_value());
  CHECK(o->gid == 50u);
  o = ResolveOwnership(std::string("4242"), std::nullopt, Db());
  CHECK((o->uid == 4242u && o->gid == 4242u));
  o = ResolveOwnership(std::nullopt, std::nullopt, Db());
  CHECK_FALSE(o->any());
}

TEST_CASE("file ownership: unknown names are refused by field", "[ownership]") {
  auto o = ResolveOwnership(std::string("ghost"), std::nullopt, Db());
  REQUIRE_FALSE(o.ok());
  CHECK(o.status().code() == ErrorCode::kUnknownUser);
  o = ResolveOwnership(std::nullopt, std::string("ghosts"), Db());
  REQUIRE_FALSE(o.ok());
  CHECK(o.status().code() == ErrorCode::kUnknownGroup);
}
