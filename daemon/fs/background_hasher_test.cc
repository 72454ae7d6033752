#include "fs/background_hasher.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <vector>

using agentd::BackgroundHasher;
using agentd::FileTags;

namespace {

// Blocks of distinct content, so a block hashed out of order changes the tag.
std::vector<std::string> Blocks(int count, size_t size) {
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) out.emplace_back(size, static_cast<char>('a' + i % 26));
  return out;
}

}  // namespace

TEST_CASE("background hasher: the tag of many blocks is the tag of their bytes in order") {
  std::vector<std::string> blocks = Blocks(40, 64 * 1024 + 7);
  std::string all;
  for (const std::string& b : blocks) all += b;
  std::mutex mu;
  std::vector<size_t> recycled;  // sizes handed back, from whichever thread
  BackgroundHasher hasher([&](std::string used) {
    std::lock_guard lock(mu);
    recycled.push_back(used.size());
  });
  for (std::string& b : blocks) hasher.Add(std::move(b));
  CHECK(hasher.Finish() == FileTags::OfBytes(all));
  std::lock_guard lock(mu);
  CHECK(recycled.size() == 40);  // every block came back for reuse
}

TEST_CASE("background hasher: one block, and none, give their own tags") {
  BackgroundHasher one([](std::string) {});
  one.Add("only");
  CHECK(one.Finish() == FileTags::OfBytes("only"));
  BackgroundHasher none([](std::string) {});
  CHECK(none.Finish() == FileTags::OfBytes(""));
}

TEST_CASE("background hasher: given up with blocks queued, it stops without finishing") {
  std::atomic<int> recycled{0};
  {
    BackgroundHasher hasher([&](std::string) { ++recycled; });
    for (std::string& b : Blocks(8, 1 << 20)) hasher.Add(std::move(b));
  }  // destroyed without Finish(): joins, drops what was still queued
  CHECK(recycled.load() <= 8);
  CHECK(recycled.load() >= 1);  // the first block is hashed in line
}
