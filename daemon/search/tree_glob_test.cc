#include "search/tree_glob.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "search/wildmatch.h"
#include "testing/temp_dir.h"

using namespace agentd;

namespace {

std::vector<std::string> Glob(const testing::TempDir& dir, const std::string& pattern,
                              uint64_t max = 1000, GlobResponse* whole = nullptr) {
  auto root = ConfinedRoot::Open(dir.path(), ConfinedRoot::Mode::kBeneath);
  REQUIRE(root.ok());
  auto rel = PathPolicy("/").Check("/");
  REQUIRE(rel.ok());
  auto fd = root->OpenAt(*rel, O_RDONLY | O_DIRECTORY);
  REQUIRE(fd.ok());
  GlobOptions o;
  bool too_many = false;
  o.patterns = ExpandBraces(pattern, 256, &too_many);
  o.max_results = max;
  auto r = RunGlob(*root, *rel, "/", fd->get(), o);
  REQUIRE(r.ok());
  std::vector<std::string> out;
  for (const FileStat& st : r->entries) out.push_back(st.path);
  if (whole) *whole = *r;
  return out;
}

using V = std::vector<std::string>;

}  // namespace

TEST_CASE("glob answers matching paths sorted, files and directories alike") {
  testing::TempDir d;
  d.Write("src/b.c", "");
  d.Write("src/a.h", "");
  d.Write("src/sub/c.c", "");
  d.Write("top.c", "");
  d.Write("src-x/d.c", "");
  CHECK(Glob(d, "*.c") == V{"/top.c"});
  CHECK(Glob(d, "src/*.c") == V{"/src/b.c"});
  CHECK(Glob(d, "**/*.c") == V{"/src-x/d.c", "/src/b.c", "/src/sub/c.c", "/top.c"});
  CHECK(Glob(d, "src/*") == V{"/src/a.h", "/src/b.c", "/src/sub"});
  CHECK(Glob(d, "src/**/*.{c,h}") == V{"/src/a.h", "/src/b.c", "/src/sub/c.c"});
  CHECK(Glob(d, "s?c/[ab].*") == V{"/src/a.h", "/src/b.c"});
}

TEST_CASE("glob keeps the first results in path order and says it cut") {
  testing::TempDir d;
  for (char c = 'a'; c <= 'z'; ++c) d.Write(std::string(1, c) + ".txt", "");
  GlobResponse g;
  CHECK(Glob(d, "*.txt", 3, &g) == V{"/a.txt", "/b.txt", "/c.txt"});
  CHECK(g.truncated);
  CHECK(g.bound == std::optional<std::string>("results"));
  CHECK(Glob(d, "*.txt", 26, &g).size() == 26);
  CHECK_FALSE(g.truncated);
}

TEST_CASE("directories no pattern can match inside are not entered") {
  CHECK(GlobCouldMatchBelow("src/*.c", "src"));
  CHECK_FALSE(GlobCouldMatchBelow("src/*.c", "lib"));
  CHECK_FALSE(GlobCouldMatchBelow("src/*.c", "src/sub"));
  CHECK(GlobCouldMatchBelow("src/**/*.c", "src/a/b"));
  CHECK(GlobCouldMatchBelow("*/x", "anything"));
  CHECK_FALSE(GlobCouldMatchBelow("*.c", "dir"));
}
