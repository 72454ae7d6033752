// The client's local tree halves: fidelity of a round trip through tar,
// and refusal of hostile archives (as a broken or hostile daemon could send).
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tree_archive.h"

using namespace agentd;
using namespace agentd::client;
namespace fs = std::filesystem;

namespace {

// Scratch directories live until the test process exits, then go.
std::string TempDir(const char* tag) {
  struct RemovedAtExit {
    std::vector<std::string> dirs;
    ~RemovedAtExit() {
      std::error_code ec;
      for (const std::string& d : dirs) std::filesystem::remove_all(d, ec);
    }
  };
  static RemovedAtExit scratch;
  std::string tmpl = std::string("/tmp/agentd-") + tag + "-XXXXXX";
  scratch.dirs.push_back(mkdtemp(tmpl.data()));
  return scratch.dirs.back();
}

void WriteFile(const std::string& path, const std::string& content, mode_t mode) {
  std::ofstream(path) << content;
  chmod(path.c_str(), mode);
}

struct EntryFacts {
  char type;
  mode_t mode;
  std::string content_or_target;
  ino_t inode;
  time_t mtime;
};

std::map<std::string, EntryFacts> Describe(const std::string& root) {
  std::map<std::string, EntryFacts> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    // lexically: fs::relative would resolve symlinks.
    std::string rel = it->path().lexically_relative(root);
    struct stat st;
    lstat(it->path().c_str(), &st);
    EntryFacts f{'?', st.st_mode & 07777, "", st.st_ino, st.st_mtime};
    if (S_ISDIR(st.st_mode)) f.type = 'd';
    if (S_ISLNK(st.st_mode)) {
      f.type = 'l';
      f.content_or_target = fs::read_symlink(it->path());
      f.mode = 0;  // symlink modes are not meaningful on Linux
    }
    if (S_ISREG(st.st_mode)) {
      f.type = 'f';
      std::ifstream in(it->path());
      f.content_or_target.assign(std::istreambuf_iterator<char>(in), {});
    }
    out[rel] = f;
  }
  return out;
}

Result<TreeStats> RoundTrip(const std::string& from, const std::string& to) {
  std::string tar = TempDir("tar") + "/t.tar";
  int fd = open(tar.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  Result<TreeStats> w = WriteTreeTar(from, fd, TarCompression::kGzip);
  close(fd);
  if (!w.ok()) return w;
  fd = open(tar.c_str(), O_RDONLY | O_CLOEXEC);
  Result<TreeStats> r = ExtractTreeTar(fd, to);
  close(fd);
  return r;
}

// Builds an archive in memory from (name, type, target) members.
struct Member {
  std::string name;
  mode_t type;
  std::string link;      // symlink target
  std::string hardlink;  // hard link target
};

std::string HostileTar(const std::vector<Member>& members) {
  std::string tar = TempDir("hostile") + "/h.tar";
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  archive_write_open_filename(a, tar.c_str());
  for (const Member& m : members) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, m.name.c_str());
    archive_entry_set_filetype(e, m.type);
    archive_entry_set_perm(e, 0644);
    if (!m.link.empty()) archive_entry_set_symlink(e, m.link.c_str());
    if (!m.hardlink.empty()) archive_entry_set_hardlink(e, m.hardlink.c_str());
    archive_entry_set_size(e, m.type == AE_IFREG && m.hardlink.empty() ? 4 : 0);
    archive_write_header(a, e);
    if (m.type == AE_IFREG && m.hardlink.empty()) archive_write_data(a, "evil", 4);
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  return tar;
}

Status Extract(const std::string& tar, const std::string& to) {
  int fd = open(tar.c_str(), O_RDONLY | O_CLOEXEC);
  Result<TreeStats> r = ExtractTreeTar(fd, to);
  close(fd);
  return r.ok() ? Status::Ok() : r.status();
}

}  // namespace

TEST_CASE("tree round trip keeps every entry kind", "[client][trees]") {
  std::string src = TempDir("src");
  fs::create_directories(src + "/a/b");
  fs::create_directories(src + "/empty");
  WriteFile(src + "/a/script.sh", "#!/bin/sh\necho hi\n", 0755);
  WriteFile(src + "/a/b/data.bin", std::string("\0\1\2binary", 9), 0600);
  WriteFile(src + "/odd name ünï.txt", "x", 0644);
  fs::create_hard_link(src + "/a/script.sh", src + "/a/hardlink.sh");
  fs::create_symlink("b/data.bin", src + "/a/rel-link");
  fs::create_symlink("/etc/hostname", src + "/abs-link");
  fs::create_symlink("does/not/exist", src + "/dangling");
  chmod((src + "/a/b").c_str(), 02750);  // setgid directory
  struct timespec times[2] = {{1000000000, 0}, {1000000000, 0}};
  utimensat(AT_FDCWD, (src + "/a/b/data.bin").c_str(), times, 0);

  std::string dst = TempDir("dst");
  Result<TreeStats> r = RoundTrip(src, dst);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  auto want = Describe(src);
  auto got = Describe(dst);
  REQUIRE(got.size() == want.size());
  for (const auto& [name, w] : want) {
    INFO(name);
    REQUIRE(got.count(name));
    const EntryFacts& g = got[name];
    CHECK(g.type == w.type);
    CHECK(g.mode == w.mode);
    CHECK(g.content_or_target == w.content_or_target);
    if (w.type == 'f') CHECK(g.mtime == w.mtime);
  }
  CHECK(got["a/hardlink.sh"].inode == got["a/script.sh"].inode);
  CHECK(got["a/b/data.bin"].mtime == 1000000000);
  // No staging directory is left behind.
  for (const auto& e : fs::directory_iterator(dst)) {
    CHECK(e.path().filename().string().rfind(".agentd-", 0) != 0);
  }
}

TEST_CASE("tree round trip keeps a sparse file's holes and its bytes", "[client][trees]") {
  std::string src = TempDir("sparse-src");
  std::string path = src + "/disk.img";
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  // 16 MiB with two islands of data: far larger than the 1 MiB the copy
  // may allocate, small enough that the byte-for-byte comparison stays
  // cheap under ASan (64 MiB took about a minute there).
  REQUIRE(ftruncate(fd, 16 << 20) == 0);
  REQUIRE(pwrite(fd, "early", 5, 1 << 20) == 5);
  REQUIRE(pwrite(fd, "late", 4, 12 << 20) == 4);
  close(fd);
  WriteFile(src + "/all-hole", "", 0644);
  REQUIRE(truncate((src + "/all-hole").c_str(), 4 << 20) == 0);
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  if (st.st_blocks * 512 >= st.st_size) {
    WARN("the temporary directory's file system has no holes: nothing to check");
    return;
  }

  std::string dst = TempDir("sparse-dst");
  Result<TreeStats> r = RoundTrip(src, dst);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  auto want = Describe(src);
  auto got = Describe(dst);
  CHECK(got["disk.img"].content_or_target == want["disk.img"].content_or_target);
  CHECK(got["all-hole"].content_or_target == std::string(4 << 20, '\0'));
  REQUIRE(stat((dst + "/disk.img").c_str(), &st) == 0);
  CHECK(st.st_size == 16 << 20);
  CHECK(st.st_blocks * 512 < (1 << 20));  // written as holes, not as 16 MiB of zeros
  REQUIRE(stat((dst + "/all-hole").c_str(), &st) == 0);
  CHECK(st.st_blocks * 512 < (1 << 20));
}

TEST_CASE("download refuses hostile archives and writes nothing", "[client][trees][security]") {
  struct Attack {
    const char* name;
    std::vector<Member> members;
  };
  std::vector<Attack> attacks = {
      {"dotdot escape", {{"ok.txt", AE_IFREG, "", ""}, {"../escaped.txt", AE_IFREG, "", ""}}},
      {"absolute path", {{"/tmp/agentd-absolute-escape.txt", AE_IFREG, "", ""}}},
      {"write through a symlink",
       {{"link", AE_IFLNK, "/tmp", ""}, {"link/agentd-through-link.txt", AE_IFREG, "", ""}}},
      {"hard link outside", {{"hl", AE_IFREG, "", "../../etc/passwd"}}},
      {"fifo", {{"pipe", AE_IFIFO, "", ""}}},
      {"character device", {{"dev", AE_IFCHR, "", ""}}},
  };
  for (const Attack& attack : attacks) {
    INFO(attack.name);
    std::string parent = TempDir("attack");
    std::string to = parent + "/dest";
    fs::create_directories(to);
    WriteFile(to + "/existing.txt", "keep", 0644);
    Status s = Extract(HostileTar(attack.members), to);
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == ErrorCode::kUnsafePath);
    CHECK(s.details().Find("member"));
    // The destination is exactly as it was, and nothing appeared beside it.
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(to)) names.push_back(e.path().filename());
    CHECK(names == std::vector<std::string>{"existing.txt"});
    std::vector<std::string> beside;
    for (const auto& e : fs::directory_iterator(parent)) beside.push_back(e.path().filename());
    CHECK(beside == std::vector<std::string>{"dest"});
    CHECK_FALSE(fs::exists("/tmp/agentd-absolute-escape.txt"));
    CHECK_FALSE(fs::exists("/tmp/agentd-through-link.txt"));
  }
}

TEST_CASE("download refuses a truncated archive and writes nothing", "[client][trees]") {
  std::string tar = HostileTar({{"a.txt", AE_IFREG, "", ""}, {"b.txt", AE_IFREG, "", ""}});
  fs::resize_file(tar, 700);  // cut inside the second member
  std::string to = TempDir("trunc");
  Status s = Extract(tar, to);
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == ErrorCode::kInvalidArchive);
  CHECK(fs::is_empty(to));
}
