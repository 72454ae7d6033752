#include "fs/file_tags.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "agentd/trees/unique_fd.h"
#include "fs/tag_cache.h"
#include "testing/temp_dir.h"

using namespace agentd;
using agentd::testing::TempDir;

namespace {

FileIdentity Id(uint64_t ino, uint64_t size) {
  FileIdentity id;
  id.dev = 1;
  id.ino = ino;
  id.size = size;
  return id;
}

UniqueFd OpenRead(const std::string& path) {
  return UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
}

}  // namespace

TEST_CASE("the tag of bytes is their quoted SHA-256", "[file_tags]") {
  CHECK(FileTags::OfBytes("abc") ==
        "\"sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"");
  CHECK(FileTags::OfBytes("") ==
        "\"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"");
}

TEST_CASE("a tag hasher fed in pieces agrees with the whole", "[file_tags]") {
  TagHasher h;
  h.Update("a");
  h.Update("bc");
  CHECK(h.Finish() == FileTags::OfBytes("abc"));
}

TEST_CASE("the tag cache drops the least recently used entry", "[file_tags]") {
  TagCache cache(2);
  cache.Store(Id(1, 10), "one");
  cache.Store(Id(2, 10), "two");
  CHECK(cache.Find(Id(1, 10)) == "one");  // 1 is now the most recent
  cache.Store(Id(3, 10), "three");
  CHECK(cache.size() == 2);
  CHECK_FALSE(cache.Find(Id(2, 10)));
  CHECK(cache.Find(Id(1, 10)) == "one");
  CHECK(cache.Find(Id(3, 10)) == "three");
}

TEST_CASE("the tag cache tells versions of one file apart by size and times", "[file_tags]") {
  TagCache cache(8);
  FileIdentity id = Id(1, 10);
  cache.Store(id, "v1");
  FileIdentity resized = id;
  resized.size = 11;
  FileIdentity touched = id;
  touched.mtime_ns += 1;
  FileIdentity changed = id;
  changed.ctime_ns += 1;
  CHECK_FALSE(cache.Find(resized));
  CHECK_FALSE(cache.Find(touched));
  CHECK_FALSE(cache.Find(changed));
  CHECK(cache.Find(id) == "v1");
}

TEST_CASE("a settled file is hashed once and then answered from the cache", "[file_tags]") {
  TempDir dir;
  dir.Write("f", "hello\n");
  FileTags tags(16, std::chrono::nanoseconds(0));
  UniqueFd fd = OpenRead(dir / "f");
  Result<std::string> first = tags.Of(fd.get(), "f");
  Result<std::string> again = tags.Of(fd.get(), "f");
  REQUIRE(first.ok());
  REQUIRE(again.ok());
  CHECK(*first == FileTags::OfBytes("hello\n"));
  CHECK(*again == *first);
  CHECK(tags.hashed() == 1);
}

TEST_CASE("a file written in place gets a new tag", "[file_tags]") {
  TempDir dir;
  dir.Write("f", "hello\n");
  FileTags tags(16, std::chrono::nanoseconds(0));
  UniqueFd fd = OpenRead(dir / "f");
  Result<std::string> before = tags.Of(fd.get(), "f");
  // Through the same inode; a new size, since within one clock tick the
  // times may not move (what the settle time is for, tested below).
  dir.Write("f", "HELLO, world\n");
  Result<std::string> after = tags.Of(fd.get(), "f");
  REQUIRE(after.ok());
  CHECK(*after == FileTags::OfBytes("HELLO, world\n"));
  CHECK(*after != *before);
}

TEST_CASE("a file changed within the settle time is hashed on every ask", "[file_tags]") {
  TempDir dir;
  dir.Write("f", "fresh\n");
  FileTags tags(16, std::chrono::hours(1));
  UniqueFd fd = OpenRead(dir / "f");
  REQUIRE(tags.Of(fd.get(), "f").ok());
  REQUIRE(tags.Of(fd.get(), "f").ok());
  CHECK(tags.hashed() == 2);
}
