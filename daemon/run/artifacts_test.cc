#include "run/artifacts.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "testing/temp_dir.h"

using namespace agentd;
using namespace std::string_literals;

namespace {

TreeSnapshot Snap(const std::string& cwd, const std::string& dir) {
  Result<TreeSnapshot> s = SnapshotArtifactsDir(cwd, dir);
  REQUIRE(s.ok());
  return std::move(*s);
}

std::string Listing(const ArtifactList& list) {
  std::string out;
  for (const Artifact& a : list.items) {
    out += a.path + " " + a.media_type + " " + std::to_string(a.bytes) + " " +
           a.sha256.value_or("-").substr(0, 12) + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("artifacts: files added or modified below the dir, by content, with their hash",
          "[run]") {
  testing::TempDir t;
  std::filesystem::create_directories(t.path() + "/out");
  t.Write("out/old.txt", "unchanged\n");
  t.Write("out/edited.csv", "a,b\n");
  t.Write("out/removed.txt", "bye\n");
  t.Write("outside.txt", "not in the artifacts dir\n");
  TreeSnapshot before = Snap(t.path(), "out");
  t.Write("out/edited.csv", "a,b\n1,2\n");
  ::unlink((t.path() + "/out/removed.txt").c_str());
  t.Write("out/plot.txt", "\x89PNG\r\n\x1a\n\0\0\0\rIHDR"s);  // named .txt, is a PNG
  std::filesystem::create_directories(t.path() + "/out/deep/er");
  t.Write("out/deep/er/hello", "hello\n");
  t.Write("outside2.txt", "not in the artifacts dir either\n");
  t.Symlink("/etc/passwd", "out/link");
  ArtifactList list = DescribeArtifacts(t.path(), "out", before, Snap(t.path(), "out"));
  CHECK(Listing(list) ==
        "out/deep/er/hello text/plain; charset=utf-8 6 5891b5b522d5\n"
        "out/edited.csv text/plain; charset=utf-8 8 " +
            list.items[1].sha256.value_or("-").substr(0, 12) +
            "\n"
            "out/plot.txt image/png 16 " +
            list.items[2].sha256.value_or("-").substr(0, 12) + "\n");
  CHECK(list.items[0].sha256 == "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
  CHECK_FALSE(list.truncated);
}

TEST_CASE("artifacts: a dir the run creates is all new; ./ and trailing slashes name the same dir",
          "[run]") {
  testing::TempDir t;
  TreeSnapshot before = Snap(t.path(), "./results/");
  std::filesystem::create_directories(t.path() + "/results");
  t.Write("results/r.json", "{\"ok\": true}\n");
  ArtifactList list =
      DescribeArtifacts(t.path(), "./results/", before, Snap(t.path(), "./results/"));
  REQUIRE(list.items.size() == 1);
  CHECK(list.items[0].path == "results/r.json");
  CHECK(list.items[0].media_type == "application/json");
}

TEST_CASE("artifacts: a dir turned into a symlink describes nothing outside and names why",
          "[run]") {
  testing::TempDir t;
  testing::TempDir elsewhere;
  elsewhere.Write("secret", "not the run's\n");
  TreeSnapshot before = Snap(t.path(), "out");
  t.Symlink(elsewhere.path(), "out");
  CHECK_FALSE(SnapshotArtifactsDir(t.path(), "out").ok());
  TreeSnapshot empty_after;  // what After() sees: no snapshot
  empty_after.complete_dirs.insert("");
  ArtifactList list = DescribeArtifacts(t.path(), "out", before, empty_after);
  CHECK(list.items.empty());
  CHECK(list.truncated);
  REQUIRE(list.bound);
  CHECK(list.bound->name == "artifacts_dir");
}

TEST_CASE("artifacts: more than the answer holds are cut with the bound named", "[run]") {
  testing::TempDir t;
  TreeSnapshot before = Snap(t.path(), "many");
  std::filesystem::create_directories(t.path() + "/many");
  for (size_t i = 0; i < kMaxArtifacts + 5; ++i) {
    t.Write("many/f" + std::to_string(1000 + i), "x");
  }
  ArtifactList list = DescribeArtifacts(t.path(), "many", before, Snap(t.path(), "many"));
  CHECK(list.items.size() == kMaxArtifacts);
  CHECK(list.truncated);
  REQUIRE(list.bound);
  CHECK(list.bound->name == "artifacts");
  CHECK(list.bound->value == static_cast<int64_t>(kMaxArtifacts));
}
