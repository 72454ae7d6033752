#include "search/tree_search.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "testing/temp_dir.h"

using namespace agentd;

namespace {

// The answer's NDJSON with the summary's elapsed_ms dropped (the one field
// that may differ between two runs).
std::string Search(const testing::TempDir& dir, const char* pattern, SearchOptions o) {
  auto root = ConfinedRoot::Open(dir.path(), ConfinedRoot::Mode::kBeneath);
  REQUIRE(root.ok());
  PathPolicy policy("/");
  auto rel = policy.Check("/");
  REQUIRE(rel.ok());
  auto fd = root->OpenAt(*rel, O_RDONLY | O_DIRECTORY);
  REQUIRE(fd.ok());
  auto m = LineMatcher::Compile(pattern, {});
  REQUIRE(m.ok());
  TreeSearch search(*root, *rel, "/", *m, o);
  std::string out;
  auto sum = search.Run(std::move(*fd), [&](std::string block) {
    out += block;
    return true;
  });
  REQUIRE(sum.ok());
  size_t at = out.rfind("\"elapsed_ms\":");
  REQUIRE(at != std::string::npos);
  size_t end = out.find_first_of(",}", at);
  return out.erase(at, end - at);
}

// Directories of files in several batches (over 128 files in one), files
// after subdirectories, binary files, and links that a followed walk
// cannot open (counted unreadable between files).
void MakeTree(const testing::TempDir& d) {
  for (int k = 0; k < 5; ++k) {
    std::string dir = "d" + std::to_string(k) + "/";
    int files = k == 2 ? 300 : 20 + 5 * k;
    for (int i = 0; i < files; ++i) {
      std::string text = "line one\n";
      for (int j = 0; j < (i * 7 + k) % 5; ++j) text += "a hit " + std::to_string(i) + "\nno\n";
      char name[16];
      std::snprintf(name, sizeof(name), "f%03d", i);
      d.Write(dir + name, text);
      if (i % 17 == 3) d.Write(dir + name + "-bin", std::string("hit\0", 4));
      if (i % 29 == 5) d.Symlink("/nonexistent-outside", dir + name + "-link");
      if (i % 40 == 9) d.Write(dir + name + "-sub/inner", "hit inside\n");
    }
  }
}

}  // namespace

TEST_CASE(
    "a search on several threads, through the io ring or not, answers what one thread answers, "
    "bounds included") {
  testing::TempDir d;
  MakeTree(d);
  const std::pair<uint64_t, uint64_t> bounds[] = {{1, 1 << 20},  {7, 1 << 20},   {150, 1 << 20},
                                                  {100000, 400}, {100000, 9000}, {100000, 1 << 20}};
  for (bool follow : {false, true}) {
    for (size_t context : {0, 1}) {
      for (auto [max_results, max_bytes] : bounds) {
        SearchOptions o;
        o.walk.follow = follow;
        o.context = context;
        o.max_results = max_results;
        o.max_bytes = max_bytes;
        o.scan_threads = 1;
        o.io_ring = false;
        std::string one = Search(d, "hit", o);
        INFO("follow " << follow << " context " << context << " max_results " << max_results
                       << " max_bytes " << max_bytes);
        for (size_t threads : {1, 2, 3}) {
          for (bool ring : {false, true}) {
            if (threads == 1 && !ring) continue;
            o.scan_threads = threads;
            o.io_ring = ring;
            INFO("threads " << threads << " io_ring " << ring);
            CHECK(Search(d, "hit", o) == one);
          }
        }
      }
    }
  }
  // The whole answer, unbounded: every file, in walk order.
  SearchOptions o;
  o.max_results = 100000;
  o.max_bytes = 1 << 30;
  o.scan_threads = 2;
  std::string all = Search(d, "hit", o);
  auto at = [&](const char* path) {
    size_t pos = all.find("\"path\":\"" + std::string(path) + "\"");
    REQUIRE(pos != std::string::npos);
    return pos;
  };
  CHECK(at("/d0/f001") < at("/d0/f009-sub/inner"));
  CHECK(at("/d0/f009-sub/inner") < at("/d0/f011"));
  CHECK(at("/d2/f298") < at("/d3/f000"));
  CHECK(all.find("\"binary_skipped\":0") == std::string::npos);
}
