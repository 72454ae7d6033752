#include "exec/tombstones.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

using namespace agentd;
using namespace std::chrono_literals;

namespace {
const Tombstones::Clock::time_point kT0 = Tombstones::Clock::time_point(1'800'000'000'000ms);
}

TEST_CASE("tombstones remember a released id for at least the keep time", "[tombstones]") {
  Tombstones t(1h);
  t.Add("job-1", kT0);
  CHECK(t.Contains("job-1", kT0));
  CHECK_FALSE(t.Contains("job-2", kT0));
  CHECK(t.Contains("job-1", kT0 + 59min));
  CHECK(t.Contains("job-1", kT0 + 1h));
  CHECK_FALSE(t.Contains("job-1", kT0 + 1h + 2min));
  CHECK(t.size() == 0);
}

TEST_CASE("tombstones stay bounded: the oldest minute goes first", "[tombstones]") {
  Tombstones t(1h, 100);
  for (int i = 0; i < 80; ++i) t.Add("old-" + std::to_string(i), kT0);
  for (int i = 0; i < 80; ++i) t.Add("new-" + std::to_string(i), kT0 + 2min);
  CHECK(t.size() == 80);
  CHECK_FALSE(t.Contains("old-1", kT0 + 2min));
  CHECK(t.Contains("new-79", kT0 + 2min));
}

TEST_CASE("tombstones survive a reload of their file, expired ones do not", "[tombstones]") {
  char tmpl[] = "/tmp/agentd-tomb-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl));
  std::string path = std::string(tmpl) + "/released";
  {
    Tombstones t(1h);
    REQUIRE(t.Load(path, kT0).ok());
    t.Add("early", kT0);
    t.Add("late", kT0 + 30min);
  }
  {
    Tombstones t(1h);
    REQUIRE(t.Load(path, kT0 + 80min).ok());
    CHECK_FALSE(t.Contains("early", kT0 + 80min));
    CHECK(t.Contains("late", kT0 + 80min));
    CHECK(t.size() == 1);
  }
  CHECK(std::filesystem::file_size(path) == 16);  // compacted on load
  std::filesystem::remove_all(tmpl);
}

TEST_CASE("tombstone hashes differ for near ids", "[tombstones]") {
  CHECK(Tombstones::Hash("a") != Tombstones::Hash("b"));
  CHECK(Tombstones::Hash("job-10") != Tombstones::Hash("job-01"));
}
