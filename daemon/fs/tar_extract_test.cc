#include "agentd/trees/tar_extract.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "fs/tar_create.h"
#include "testing/temp_dir.h"

using namespace agentd;
using agentd::testing::TempDir;

namespace {

// Hands out a string in pieces of `step` bytes; optionally fails at the end
// (a client that went away).
class MemorySource : public ByteSource {
 public:
  MemorySource(std::string data, size_t step, bool fail_at_end = false)
      : data_(std::move(data)), step_(step), fail_(fail_at_end) {}
  Result<std::string_view> Read() override {
    if (off_ >= data_.size()) {
      if (fail_) return Status::Error(ErrorCode::kTransport, "gone");
      return std::string_view();
    }
    std::string_view out = std::string_view(data_).substr(off_, step_);
    off_ += out.size();
    return out;
  }

 private:
  std::string data_;
  size_t step_;
  bool fail_;
  size_t off_ = 0;
};

class MemorySink : public ByteSink {
 public:
  Status Write(std::string_view bytes) override {
    data.append(bytes);
    return Status::Ok();
  }
  std::string data;
};

// Takes each chunk whole and hands used ones back, their bytes overwritten
// with garbage: what the writer sends must never include stale bytes.
class RecyclingSink : public ByteSink {
 public:
  Status Write(std::string_view bytes) override {
    data.append(bytes);
    return Status::Ok();
  }
  Status WriteOwned(std::string&& bytes) override {
    data.append(bytes);
    ++owned;
    std::fill(bytes.begin(), bytes.end(), 'Z');
    spares.push_back(std::move(bytes));
    return Status::Ok();
  }
  std::string TakeBuffer() override {
    if (spares.empty()) {
      ++fresh;
      return std::string();
    }
    std::string out = std::move(spares.back());
    spares.pop_back();
    return out;
  }
  std::string data;
  std::vector<std::string> spares;
  int owned = 0;
  int fresh = 0;
};

UniqueFd OpenDir(const std::string& path) {
  return UniqueFd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

struct stat Lstat(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st;
}

// A small tree with every kind of entry, under tmp/src.
void MakeTree(const TempDir& tmp) {
  tmp.Mkdir("src");
  tmp.Mkdir("src/dir");
  tmp.Mkdir("src/empty");
  tmp.Write("src/dir/file", std::string(100000, 'x') + "end");
  tmp.Write("src/exec", "#!/bin/sh\n");
  ::chmod((tmp / "src/exec").c_str(), 0755);
  ::chmod((tmp / "src/empty").c_str(), 02750);
  tmp.Symlink("dir/file", "src/rel");
  tmp.Symlink("/nowhere/at/all", "src/abs");
  REQUIRE(::link((tmp / "src/dir/file").c_str(), (tmp / "src/hard").c_str()) == 0);
  struct timespec times[2] = {{0, UTIME_OMIT}, {1234567890, 123456789}};
  REQUIRE(::utimensat(AT_FDCWD, (tmp / "src/exec").c_str(), times, 0) == 0);
}

std::string Archive(const TempDir& tmp, TarCompression compression) {
  UniqueFd src = OpenDir(tmp / "src");
  MemorySink sink;
  REQUIRE(CreateTar(src.get(), "/src", compression, sink).ok());
  return sink.data;
}

Result<TarUploadResponse> Extract(const TempDir& tmp, const std::string& archive,
                                  ExtractOptions opts = {}, size_t step = 4096, bool fail = false) {
  tmp.Mkdir("dst");
  UniqueFd dst = OpenDir(tmp / "dst");
  MemorySource source(archive, step, fail);
  return ExtractTar(source, dst.get(), "/dst", opts);
}

int CountEntries(const std::string& dir) {
  int n = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) n += !e.path().empty();
  return n;
}

}  // namespace

TEST_CASE("a tree archived and extracted comes back entry for entry", "[tar]") {
  for (TarCompression c : {TarCompression::kNone, TarCompression::kGzip, TarCompression::kZstd}) {
    TempDir tmp;
    MakeTree(tmp);
    std::string archive = Archive(tmp, c);
    auto answer = Extract(tmp, archive, {}, 777);  // odd piece sizes on purpose
    REQUIRE(answer.ok());
    CHECK(answer->entries == 7);
    CHECK(answer->bytes == 100003 + 10);  // the hard link carries no data
    CHECK(tmp.Read("dst/dir/file") == tmp.Read("src/dir/file"));
    CHECK((Lstat(tmp / "dst/exec").st_mode & 07777) == 0755);
    CHECK(Lstat(tmp / "dst/exec").st_mtim.tv_nsec == 123456789);
    CHECK((Lstat(tmp / "dst/empty").st_mode & 07777) == 02750);
    char buf[64];
    ssize_t n = ::readlink((tmp / "dst/abs").c_str(), buf, sizeof(buf));
    CHECK(std::string(buf, static_cast<size_t>(n)) == "/nowhere/at/all");
    CHECK(S_ISLNK(Lstat(tmp / "dst/rel").st_mode));
    CHECK(Lstat(tmp / "dst/hard").st_ino == Lstat(tmp / "dst/dir/file").st_ino);
    CHECK(CountEntries(tmp / "dst") == 6);  // no staging directory left
  }
}

TEST_CASE("the archive's chunks go to the sink whole and come back to be refilled", "[tar]") {
  for (TarCompression c : {TarCompression::kNone, TarCompression::kGzip}) {
    TempDir tmp;
    MakeTree(tmp);
    std::string big;
    for (int i = 0; i < (3 << 20) / 16; ++i) big += "0123456789abcde\n";
    tmp.Write("src/dir/big", big + "tail");  // about a dozen chunks, read into in place
    std::string copied = Archive(tmp, c);
    UniqueFd src = OpenDir(tmp / "src");
    RecyclingSink sink;
    REQUIRE(CreateTar(src.get(), "/src", c, sink).ok());
    CHECK(sink.data == copied);  // the same bytes as through Write, no stale ones
    if (c == TarCompression::kNone) {
      CHECK(sink.owned >= 10);  // 3 MiB in chunks of 256 to 320 KiB
      CHECK(sink.fresh <= 1);   // every later chunk refilled a buffer handed back
    }
    auto answer = Extract(tmp, sink.data);
    REQUIRE(answer.ok());
    CHECK(tmp.Read("dst/dir/big") == big + "tail");
  }
}

TEST_CASE("a gzip archive carries no time of its making", "[tar]") {
  // RFC 1952: MTIME is bytes 4-7 of the member header, 0 when none is kept.
  // With it, two downloads of the same tree a second apart differed.
  TempDir tmp;
  MakeTree(tmp);
  std::string archive = Archive(tmp, TarCompression::kGzip);
  REQUIRE(archive.size() > 10);
  CHECK(archive.substr(0, 2) == "\x1f\x8b");
  CHECK(archive.substr(4, 4) == std::string(4, '\0'));
}

TEST_CASE("garbage and truncated archives are invalid and leave nothing", "[tar]") {
  TempDir tmp;
  MakeTree(tmp);
  std::string archive = Archive(tmp, TarCompression::kGzip);
  for (std::string bad :
       {std::string(3000, 'g'), archive.substr(0, archive.size() / 2), std::string()}) {
    TempDir other;
    auto answer = Extract(other, bad);
    REQUIRE_FALSE(answer.ok());
    CHECK(answer.status().code() == ErrorCode::kInvalidArchive);
    CHECK(CountEntries(other / "dst") == 0);
  }
}

TEST_CASE("a broken source is reported as such and leaves nothing", "[tar]") {
  TempDir tmp;
  MakeTree(tmp);
  std::string archive = Archive(tmp, TarCompression::kNone);
  TempDir other;
  auto answer = Extract(other, archive.substr(0, 2048), {}, 512, /*fail=*/true);
  REQUIRE_FALSE(answer.ok());
  CHECK(answer.status().code() == ErrorCode::kTransport);
  CHECK(CountEntries(other / "dst") == 0);
}

TEST_CASE("caps stop an archive at the header that crosses them", "[tar]") {
  TempDir tmp;
  MakeTree(tmp);
  std::string archive = Archive(tmp, TarCompression::kNone);
  ExtractOptions opts;
  opts.caps.max_entries = 3;
  TempDir a;
  auto answer = Extract(a, archive, opts);
  REQUIRE_FALSE(answer.ok());
  CHECK(answer.status().code() == ErrorCode::kArchiveTooLarge);
  CHECK(answer.status().details().Find("cap")->as_string() == "entries");
  CHECK(CountEntries(a / "dst") == 0);
  opts = {};
  opts.caps.max_entry_bytes = 50000;
  TempDir b;
  answer = Extract(b, archive, opts);
  REQUIRE_FALSE(answer.ok());
  CHECK(answer.status().details().Find("cap")->as_string() == "entry_bytes");
  CHECK(answer.status().details().Find("value")->as_int() == 100003);
}
