#include "reuse/tree_restore.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "testing/temp_dir.h"

namespace agentd {
namespace {

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string Read(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

struct Trees {
  testing::TempDir tmp;
  std::string live = tmp.path() + "/live";
  std::string golden = tmp.path() + "/golden";
  TreeManifest manifest;

  Trees() {
    ::mkdir(live.c_str(), 0755);
    ::mkdir((live + "/src").c_str(), 0755);
    Write(live + "/src/main.py", "print('golden')\n");
    Write(live + "/README", "read me\n");
    REQUIRE(::symlink("src/main.py", (live + "/entry").c_str()) == 0);
    REQUIRE(SnapshotTree(live, golden, manifest).ok());
  }
};

TEST_CASE("an untouched tree is equal to its golden copy", "[tree_restore]") {
  Trees t;
  CHECK(CompareTrees(t.golden, t.live, t.manifest).empty());
  RestoreResult r = RestoreTree(t.golden, t.live, t.manifest);
  CHECK(r.removed_entries == 0);
  CHECK(r.remaining.empty());
}

TEST_CASE("a restore removes what the tenant added and undoes what it changed", "[tree_restore]") {
  Trees t;
  ::mkdir((t.live + "/out").c_str(), 0700);
  Write(t.live + "/out/canary", "tenant-a-secret");  // 15 bytes
  Write(t.live + "/src/main.py", "print('tampered')\n");
  struct stat before;
  REQUIRE(::stat((t.live + "/README").c_str(), &before) == 0);
  ::chmod((t.live + "/README").c_str(), 0777);
  ::unlink((t.live + "/entry").c_str());
  REQUIRE(::symlink("/etc/passwd", (t.live + "/entry").c_str()) == 0);
  CHECK(CompareTrees(t.golden, t.live, t.manifest).size() >= 4);

  RestoreResult r = RestoreTree(t.golden, t.live, t.manifest);
  CHECK(r.remaining.empty());
  CHECK(r.removed_bytes >= 15);
  CHECK(r.removed_entries >= 3);  // out/, out/canary, main.py, entry
  CHECK(::access((t.live + "/out").c_str(), F_OK) != 0);
  CHECK(Read(t.live + "/src/main.py") == "print('golden')\n");
  struct stat st;
  REQUIRE(::stat((t.live + "/README").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == (before.st_mode & 07777));
  char target[64] = {};
  REQUIRE(::readlink((t.live + "/entry").c_str(), target, sizeof(target) - 1) > 0);
  CHECK(std::string(target) == "src/main.py");
  CHECK(CompareTrees(t.golden, t.live, t.manifest).empty());
}

TEST_CASE("a rewrite with the same size is found by identity, not by size", "[tree_restore]") {
  Trees t;
  Write(t.live + "/README", "READ ME\n");  // same length
  std::vector<ResetRemaining> diff = CompareTrees(t.golden, t.live, t.manifest);
  REQUIRE(diff.size() == 1);
  CHECK(diff[0].name == t.live + "/README");
  RestoreTree(t.golden, t.live, t.manifest);
  CHECK(Read(t.live + "/README") == "read me\n");
}

TEST_CASE("a deleted baseline file and a replaced directory come back", "[tree_restore]") {
  Trees t;
  ::unlink((t.live + "/src/main.py").c_str());
  ::rmdir((t.live + "/src").c_str());
  Write(t.live + "/src", "now a file");
  RestoreResult r = RestoreTree(t.golden, t.live, t.manifest);
  CHECK(r.remaining.empty());
  CHECK(Read(t.live + "/src/main.py") == "print('golden')\n");
  CHECK(CompareTrees(t.golden, t.live, t.manifest).empty());
}

}  // namespace
}  // namespace agentd
