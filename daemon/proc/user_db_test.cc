#include <catch2/catch.hpp>

#include "proc/user_db.h"

using namespace agentd;

namespace {

constexpr char kPasswd[] =
    "root:x:0:0:root:/root:/bin/bash\n"
    "# a comment\n"
    "\n"
    "alice:x:1000:1000:Alice,,,:/home/alice:/bin/sh\r\n"
    "broken line without fields\n"
    "bob:x:1001:100::/home/bob:/bin/sh\n"
    "+nisuser::::::\n"
    "badid:x:abc:1:::\n"
    "nohome:x:1002:1002:::/bin/sh\n";

constexpr char kGroup[] =
    "root:x:0:\n"
    "users:x:100:alice\n"
    "alice:x:1000:\n"
    "docker:x:998:bob,alice\n"
    "wheel:x:10:carol\n"
    "junk\n";

UserDb Db() { return UserDb{ParsePasswd(kPasswd), ParseGroup(kGroup)}; }

}  // namespace

TEST_CASE("passwd parser keeps well-formed entries and skips the rest", "[user_db]") {
  std::vector<PasswdEntry> users = ParsePasswd(kPasswd);
  REQUIRE(users.size() == 4);
  CHECK(users[1].name == "alice");
  CHECK(users[1].uid == 1000);
  CHECK(users[1].home == "/home/alice");
  std::vector<GroupEntry> groups = ParseGroup(kGroup);
  REQUIRE(groups.size() == 5);
  CHECK(groups[3].members == std::vector<std::string>{"bob", "alice"});
  CHECK(groups[0].members.empty());
}

TEST_CASE("a user by name gets its primary group and every group listing it", "[user_db]") {
  auto c = ResolveCredentials("alice", std::nullopt, Db());
  REQUIRE(c.ok());
  REQUIRE(c->has_value());
  CHECK((*c)->uid == 1000u);
  CHECK((*c)->gid == 1000u);
  CHECK((*c)->groups == std::vector<gid_t>{1000, 100, 998});
  CHECK((*c)->home == "/home/alice");
  CHECK((*c)->user_name == "alice");
}

TEST_CASE("a numeric user in passwd resolves to its entry", "[user_db]") {
  auto c = ResolveCredentials("1001", std::nullopt, Db());
  REQUIRE(c.ok());
  CHECK((*c)->user_name == "bob");
  CHECK((*c)->gid == 100u);
  CHECK((*c)->groups == std::vector<gid_t>{100, 998});
}

TEST_CASE("group overrides the primary group; supplementary groups stay", "[user_db]") {
  auto c = ResolveCredentials("alice", "wheel", Db());
  REQUIRE(c.ok());
  CHECK((*c)->gid == 10u);
  CHECK((*c)->groups == std::vector<gid_t>{10, 100, 998});
}

TEST_CASE("unknown names are refused with the matching code", "[user_db]") {
  CHECK(ResolveCredentials("mallory", std::nullopt, Db()).status().code() ==
        ErrorCode::kUnknownUser);
  CHECK(ResolveCredentials("alice", "nogroup", Db()).status().code() == ErrorCode::kUnknownGroup);
  CHECK(ResolveCredentials("1000x", std::nullopt, Db()).status().code() == ErrorCode::kUnknownUser);
}

TEST_CASE("a number absent from passwd is its own group with HOME /", "[user_db]") {
  auto c = ResolveCredentials("4242", std::nullopt, UserDb{});
  REQUIRE(c.ok());
  CHECK((*c)->uid == 4242u);
  CHECK((*c)->gid == 4242u);
  CHECK((*c)->groups == std::vector<gid_t>{4242});
  CHECK((*c)->home == "/");
  CHECK((*c)->user_name == "4242");
}

TEST_CASE("group alone keeps the user and sets only the group", "[user_db]") {
  auto c = ResolveCredentials(std::nullopt, "docker", Db());
  REQUIRE(c.ok());
  CHECK_FALSE((*c)->uid);
  CHECK((*c)->gid == 998u);
  CHECK((*c)->groups == std::vector<gid_t>{998});
  auto none = ResolveCredentials(std::nullopt, std::nullopt, Db());
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
}

TEST_CASE("an entry with an empty home directory gets /", "[user_db]") {
  auto c = ResolveCredentials("nohome", std::nullopt, Db());
  REQUIRE(c.ok());
  CHECK((*c)->home == "/");
}
