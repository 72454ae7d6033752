#include "search/tree_walk.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "testing/temp_dir.h"

using namespace agentd;

namespace {

std::vector<std::string> Walk(const testing::TempDir& dir, WalkOptions o, std::string sub = "") {
  auto root = ConfinedRoot::Open(dir.path(), ConfinedRoot::Mode::kBeneath);
  REQUIRE(root.ok());
  PathPolicy policy("/");
  auto rel = policy.Check("/" + sub);
  REQUIRE(rel.ok());
  auto fd = root->OpenAt(*rel, O_RDONLY | O_DIRECTORY);
  REQUIRE(fd.ok());
  TreeWalk walk(*root, *rel, o);
  std::vector<std::string> seen;
  REQUIRE(walk.Run(fd->get(),
                   [&](const WalkEntry& e) {
                     seen.push_back(e.walk_path);
                     return WalkStep::kContinue;
                   })
              .ok());
  return seen;
}

using V = std::vector<std::string>;

}  // namespace

TEST_CASE("the walk is depth first in byte order and skips hidden names") {
  testing::TempDir d;
  d.Write("b/x", "");
  d.Write("a", "");
  d.Write(".h/y", "");
  d.Write(".dot", "");
  CHECK(Walk(d, {}) == V{"a", "b", "b/x"});
  WalkOptions o;
  o.hidden = true;
  CHECK(Walk(d, o) == V{".dot", ".h", ".h/y", "a", "b", "b/x"});
}

TEST_CASE("gitignore rules, negation and directory rules prune the walk") {
  testing::TempDir d;
  d.Write(".gitignore", "*.log\n!keep.log\nbuild/\n");
  d.Write("a.log", "");
  d.Write("keep.log", "");
  d.Write("build/out", "");
  d.Write("src/build", "");  // a file named build: not a directory rule's match
  d.Write("src/.gitignore", "!a.log\n");
  d.Write("src/a.log", "");
  CHECK(Walk(d, {}) == V{"keep.log", "src", "src/a.log", "src/build"});
  WalkOptions off;
  off.gitignore = false;
  CHECK(Walk(d, off) ==
        V{"a.log", "build", "build/out", "keep.log", "src", "src/a.log", "src/build"});
}

TEST_CASE(".ignore and .git/info/exclude count; .git is never walked") {
  testing::TempDir d;
  d.Write(".git/info/exclude", "secret\n");
  d.Write(".git/HEAD", "");
  d.Write(".ignore", "tmp\n");
  d.Write("secret", "");
  d.Write("tmp", "");
  d.Write("ok", "");
  WalkOptions o;
  o.hidden = true;
  CHECK(Walk(d, o) == V{".ignore", "ok"});
}

TEST_CASE("a walk below a repository's top honours the top's rules") {
  testing::TempDir d;
  d.Write(".git/HEAD", "");
  d.Write(".gitignore", "/src/gen/\n*.tmp\n");
  d.Write("src/gen/x", "");
  d.Write("src/a.tmp", "");
  d.Write("src/a.c", "");
  CHECK(Walk(d, {}, "src") == V{"a.c"});
}

TEST_CASE("exclude patterns prune files and directories") {
  testing::TempDir d;
  d.Write("vendor/x.c", "");
  d.Write("a/vendor.c", "");
  d.Write("a/b.c", "");
  WalkOptions o;
  o.exclude = {"vendor", "a/b.*"};
  CHECK(Walk(d, o) == V{"a", "a/vendor.c"});
}

TEST_CASE("symlinks are not entered unless followed, and never out of the root") {
  testing::TempDir outside;
  outside.Write("secret.txt", "");
  testing::TempDir d;
  d.Write("real/f", "");
  REQUIRE(::symlink("real", (d / "inside").c_str()) == 0);
  REQUIRE(::symlink(outside.path().c_str(), (d / "out").c_str()) == 0);
  REQUIRE(::symlink("..", (d / "real/up").c_str()) == 0);  // a loop
  CHECK(Walk(d, {}) == V{"inside", "out", "real", "real/f", "real/up"});
  WalkOptions o;
  o.follow = true;
  // "out" leads out of the root: not reported, not entered. "up" is a
  // loop back to the root: reported, not entered again.
  CHECK(Walk(d, o) == V{"inside", "inside/f", "inside/up", "real", "real/f", "real/up"});
}
