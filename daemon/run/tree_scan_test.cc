#include "run/tree_scan.h"
#include "testing/temp_dir.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace agentd;
namespace fs = std::filesystem;

namespace {

TreeSnapshot Scan(const std::string& root, const TreeSnapshot* before = nullptr,
                  uint64_t max_entries = 1000) {
  ScanOptions o;
  o.max_entries = max_entries;
  auto s = ScanTree(root, o, before);
  REQUIRE(s.ok());
  return std::move(*s);
}

std::string Changes(const TreeDiff& d) {
  std::string out;
  for (const ChangedFile& f : d.changes) out += f.change + " " + f.path + " " + f.type + "\n";
  return out;
}

}  // namespace

TEST_CASE("changed files: added, modified, removed, new directories", "[scan]") {
  testing::TempDir t;
  t.Write("keep.txt", "same");
  t.Write("edit.txt", "one");
  t.Write("gone.txt", "bye");
  TreeSnapshot before = Scan(t.path());
  t.Write("edit.txt", "three");
  fs::remove(t.path() + "/gone.txt");
  t.Write("new/dir/file.txt", "x");
  TreeSnapshot after = Scan(t.path(), &before);
  TreeDiff d = DiffTrees(before, after, 100);
  CHECK(Changes(d) ==
        "modified edit.txt file\nremoved gone.txt file\nadded new dir\nadded new/dir dir\n"
        "added new/dir/file.txt file\n");
  CHECK_FALSE(d.truncated);
}

TEST_CASE("a same-size rewrite right after the scan is a modification", "[scan]") {
  testing::TempDir t;
  t.Write("f.txt", "aaaa");
  TreeSnapshot before = Scan(t.path());
  // Same size, written within the same timestamp tick as the first write
  // as often as not: only the racy-file hash can tell.
  t.Write("f.txt", "bbbb");
  TreeSnapshot after = Scan(t.path(), &before);
  CHECK(Changes(DiffTrees(before, after, 100)) == "modified f.txt file\n");
  // And an untouched racy file is not reported.
  TreeSnapshot again = Scan(t.path(), &after);
  CHECK(Changes(DiffTrees(after, again, 100)).empty());
}

TEST_CASE("an entry bound is reported and never turns into removals", "[scan]") {
  testing::TempDir t;
  for (int i = 0; i < 50; ++i) t.Write("d/f" + std::to_string(i), "x");
  t.Write("a.txt", "x");
  TreeSnapshot before = Scan(t.path(), nullptr, 10);
  t.Write("a.txt", "yy");
  TreeSnapshot after = Scan(t.path(), &before, 10);
  TreeDiff d = DiffTrees(before, after, 100);
  REQUIRE(d.bound);
  CHECK(d.bound->name == "scan_entries");
  CHECK(d.truncated);
  CHECK(Changes(d) == "modified a.txt file\n");  // the root was read whole; d/ was not
}

TEST_CASE("the answer bound keeps the first changes by path", "[scan]") {
  testing::TempDir t;
  TreeSnapshot before = Scan(t.path());
  for (int i = 0; i < 5; ++i) t.Write("f" + std::to_string(i), "x");
  TreeSnapshot after = Scan(t.path(), &before);
  TreeDiff d = DiffTrees(before, after, 2);
  CHECK(d.changes.size() == 2);
  CHECK(d.total == 5);
  REQUIRE(d.bound);
  CHECK(d.bound->name == "answer_entries");
}

TEST_CASE("an excluded directory is never read", "[scan]") {
  testing::TempDir t;
  t.Write("state/x", "1");
  ScanOptions o;
  o.exclude = DirIdentity(t.path() + "/state");
  auto before = ScanTree(t.path(), o);
  REQUIRE(before.ok());
  t.Write("state/y", "2");
  auto after = ScanTree(t.path(), o, &*before);
  REQUIRE(after.ok());
  CHECK(DiffTrees(*before, *after, 100).changes.empty());
}

TEST_CASE("a time bound is reported and what it left unread is not compared", "[scan]") {
  testing::TempDir t;
  for (int i = 0; i < 600; ++i) t.Write("d/f" + std::to_string(i), "x");
  ScanOptions o;
  o.max_time = std::chrono::milliseconds(0);
  auto before = ScanTree(t.path(), o);
  REQUIRE(before.ok());
  fs::remove(t.path() + "/d/f599");
  auto after = ScanTree(t.path(), o, &*before);
  REQUIRE(after.ok());
  TreeDiff d = DiffTrees(*before, *after, 100);
  REQUIRE(d.bound);
  CHECK(d.bound->name == "scan_time");
  CHECK(d.bound->unit == "ms");
  CHECK(d.truncated);
  CHECK(d.changes.empty());
}

TEST_CASE("a tree wider than the descriptors a scan holds is read whole", "[scan]") {
  testing::TempDir t;
  for (int i = 0; i < 40; ++i) t.Write("d" + std::to_string(i) + "/sub/f", "a");
  ScanOptions o;
  o.max_open_dirs = 3;
  auto before = ScanTree(t.path(), o);
  REQUIRE(before.ok());
  for (int i = 0; i < 40; ++i) t.Write("d" + std::to_string(i) + "/sub/f", "bb");
  auto after = ScanTree(t.path(), o, &*before);
  REQUIRE(after.ok());
  TreeDiff d = DiffTrees(*before, *after, 100);
  CHECK_FALSE(d.bound);
  CHECK(d.changes.size() == 40);
}

TEST_CASE("a scan short of descriptors still reads every directory", "[scan]") {
  testing::TempDir t;
  for (int i = 0; i < 300; ++i) t.Write("d" + std::to_string(i) + "/f", "a");
  struct rlimit saved;
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  // Room for what is open now and a few more, far fewer than 300.
  int highest = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(highest >= 0);
  ::close(highest);
  struct rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(highest + 16);
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  auto before = ScanTree(t.path(), ScanOptions{});
  for (int i = 0; i < 300; ++i) t.Write("d" + std::to_string(i) + "/f", "bb");
  auto after = ScanTree(t.path(), ScanOptions{}, before.ok() ? &*before : nullptr);
  ::setrlimit(RLIMIT_NOFILE, &saved);
  REQUIRE(before.ok());
  REQUIRE(after.ok());
  TreeDiff d = DiffTrees(*before, *after, 1000);
  CHECK_FALSE(d.bound);
  CHECK(d.changes.size() == 300);
}
