#include <catch2/catch.hpp>

#include "proc/child_env.h"

using namespace agentd;

TEST_CASE("child env: daemon env minus AGENTD_*, launch env, then request env", "[env]") {
  const char* daemon_env[] = {"PATH=/bin",     "AGENTD_TOKEN=secret", "KEEP=1",
                              "SHARED=daemon", "AGENTD_X=y",          nullptr};
  EnvList launch = {{"SHARED", "launch"}, {"LAUNCH_ONLY", "l"}, {"BOTH", "launch"}};
  EnvOverlay request = {{"BOTH", "request"}, {"KEEP", std::nullopt}, {"NEW", "n"}};
  std::vector<std::string> env = BuildChildEnv(daemon_env, launch, nullptr, request);
  CHECK(env == std::vector<std::string>{"PATH=/bin", "SHARED=launch", "LAUNCH_ONLY=l",
                                        "BOTH=request", "NEW=n"});
}

TEST_CASE("child env: identity sets HOME, USER, LOGNAME; the request still wins", "[env]") {
  const char* daemon_env[] = {"HOME=/root", "USER=root", nullptr};
  Credentials alice;
  alice.uid = 1000;
  alice.user_name = "alice";
  alice.home = "/home/alice";
  std::vector<std::string> env =
      BuildChildEnv(daemon_env, {{"HOME", "/launch"}}, &alice, {{"LOGNAME", "override"}});
  CHECK(env == std::vector<std::string>{"HOME=/home/alice", "USER=alice", "LOGNAME=override"});
  std::string value;
  REQUIRE(FindEnv(env, "HOME", &value));
  CHECK(value == "/home/alice");
  CHECK_FALSE(FindEnv(env, "HOM", nullptr));
}

TEST_CASE("child env: a group-only identity leaves HOME alone", "[env]") {
  const char* daemon_env[] = {"HOME=/root", nullptr};
  Credentials group_only;
  group_only.gid = 5;
  CHECK(BuildChildEnv(daemon_env, {}, &group_only, {}) == std::vector<std::string>{"HOME=/root"});
}
