#include "limits/cgroup_info.h"

#include <catch2/catch.hpp>

using namespace agentd;

TEST_CASE("/proc/self/cgroup lines of a hybrid hierarchy", "[cgroup]") {
  auto v = ParseProcCgroup("8:pids:/\n4:memory:/process_api/abc\n2:cpu,cpuacct:/x\n0::/\n");
  REQUIRE(v.size() == 4);
  CHECK(v[1].controllers == std::vector<std::string>{"memory"});
  CHECK(v[1].path == "/process_api/abc");
  CHECK(v[2].controllers == std::vector<std::string>{"cpu", "cpuacct"});
  CHECK(v[3].hierarchy == 0);
  CHECK(v[3].controllers.empty());
}

TEST_CASE("cgroup mounts from mountinfo, with their controllers", "[cgroup]") {
  std::string text =
      "30 25 0:26 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"
      "31 25 0:27 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
      "32 25 0:28 /sub /sys/fs/cgroup/cpu\\040x rw - cgroup cgroup rw,cpu,cpuacct\n"
      "33 25 0:29 / /proc rw - proc proc rw\n";
  auto m = ParseCgroupMounts(text);
  REQUIRE(m.size() == 3);
  CHECK(m[0].mount_point == "/sys/fs/cgroup/memory");
  CHECK(m[0].controllers == std::vector<std::string>{"memory"});
  CHECK(m[1].v2);
  CHECK(m[2].root == "/sub");
  CHECK(m[2].mount_point == "/sys/fs/cgroup/cpu x");
  CHECK(m[2].controllers == std::vector<std::string>{"cpu", "cpuacct"});
}

TEST_CASE("flat-keyed counters", "[cgroup]") {
  CHECK(FlatKeyedValue("low 0\nhigh 0\nmax 4\noom 1\noom_kill 2\n", "oom_kill") == 2);
  CHECK(FlatKeyedValue("max 7\n", "max") == 7);
  CHECK_FALSE(FlatKeyedValue("maxx 7\n", "max").has_value());
  CHECK(JoinPath("/sys/fs/cgroup/", "/a/b") == "/sys/fs/cgroup/a/b");
  CHECK(JoinPath("/sys/fs/cgroup", "/") == "/sys/fs/cgroup");
}

TEST_CASE("cgroup.events: populated and frozen", "[cgroup]") {
  auto live = ParseCgroupEvents("populated 1\nfrozen 0\n");
  REQUIRE(live.has_value());
  CHECK(live->populated);
  CHECK_FALSE(live->frozen);
  auto frozen = ParseCgroupEvents("populated 1\nfrozen 1\n");
  REQUIRE(frozen.has_value());
  CHECK(frozen->frozen);
  // Emptied: what a reset waits for after cgroup.kill.
  auto empty = ParseCgroupEvents("populated 0\nfrozen 0\n");
  REQUIRE(empty.has_value());
  CHECK_FALSE(empty->populated);
  // Before Linux 5.2 there is no frozen line.
  auto old = ParseCgroupEvents("populated 0\n");
  REQUIRE(old.has_value());
  CHECK_FALSE(old->populated);
  CHECK_FALSE(old->frozen);
  // Not a cgroup.events text (an empty read, a different file).
  CHECK_FALSE(ParseCgroupEvents("").has_value());
  CHECK_FALSE(ParseCgroupEvents("unpopulated 0\n").has_value());
  CHECK_FALSE(ParseCgroupEvents("populated\n").has_value());
}
