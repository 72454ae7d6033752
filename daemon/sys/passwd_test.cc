#include "sys/passwd.h"

#include <catch2/catch.hpp>

#include "testing/temp_dir.h"

using namespace agentd;

TEST_CASE("passwd and group lines parse, comments and junk do not", "[passwd]") {
  auto p = ParsePasswdLine("agent:x:1000:1001:Agent,,,:/home/agent:/bin/bash\n");
  REQUIRE(p);
  CHECK(p->name == "agent");
  CHECK(p->uid == 1000);
  CHECK(p->gid == 1001);
  CHECK(p->home == "/home/agent");
  CHECK(p->shell == "/bin/bash");
  CHECK_FALSE(ParsePasswdLine("# comment"));
  CHECK_FALSE(ParsePasswdLine(""));
  CHECK_FALSE(ParsePasswdLine("bad:x:notanumber:1::/:/bin/sh"));
  CHECK_FALSE(ParsePasswdLine("short:x:1"));
  auto g = ParseGroupLine("staff:x:50:agent,other");
  REQUIRE(g);
  CHECK(g->name == "staff");
  CHECK(g->gid == 50);
}

TEST_CASE("users and groups are found by name or number in the guest's files", "[passwd]") {
  agentd::testing::TempDir tmp;
  tmp.Write("passwd", "root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1001::/home/agent:/bin/sh\n");
  tmp.Write("group", "root:x:0:\nagents:x:1001:\n");
  auto u = LookupUser("agent", tmp / "passwd");
  REQUIRE(u);
  CHECK((u->uid == 1000 && u->gid == 1001));
  u = LookupUser("1000", tmp / "passwd");
  REQUIRE(u);
  CHECK(u->name == "agent");
  u = LookupUser("4242", tmp / "passwd");  // numeric, unknown: still usable
  REQUIRE(u);
  CHECK(u->uid == 4242);
  CHECK(u->gid == static_cast<gid_t>(-1));
  CHECK_FALSE(LookupUser("nobody-here", tmp / "passwd"));
  CHECK(LookupGroup("agents", tmp / "group")->gid == 1001);
  CHECK(LookupGroup("77", tmp / "group")->gid == 77);
  CHECK_FALSE(LookupGroup("ghosts", tmp / "group"));
}
