// UploadDir and DownloadDir against the real daemon's tar routes: what the
// client sends, the daemon extracts, and what it sends back, the client
// extracts, entry for entry.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "agentd/client/client.h"
#include "daemon_process.h"

using namespace agentd;
using namespace agentd::client;
using agentd::testing::DaemonProcess;
namespace fs = std::filesystem;

namespace {

struct Scratch {
  fs::path root;
  Scratch() {
    char tmpl[] = "/tmp/agentd-client-trees-XXXXXX";
    root = ::mkdtemp(tmpl);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

void Write(const fs::path& p, const std::string& content, fs::perms mode) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << content;
  fs::permissions(p, mode);
}

void MakeTree(const fs::path& src) {
  Write(src / "README.md", "# repo\n", fs::perms(0644));
  Write(src / "bin/run.sh", "#!/bin/sh\necho hi\n", fs::perms(0755));
  Write(src / "src/main.c", std::string(200000, 'c'), fs::perms(0600));
  fs::create_directories(src / "empty/inside");
  fs::create_symlink("../README.md", src / "bin/readme");
  fs::create_symlink("/does/not/exist", src / "dangling");
  fs::create_hard_link(src / "src/main.c", src / "main-again.c");
}

struct stat Lstat(const fs::path& p) {
  struct stat st {};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st;
}

void CheckSame(const fs::path& want, const fs::path& got) {
  for (const char* rel : {"README.md", "bin/run.sh", "src/main.c", "main-again.c"}) {
    INFO(rel);
    struct stat a = Lstat(want / rel), b = Lstat(got / rel);
    CHECK((a.st_mode & 07777) == (b.st_mode & 07777));
    CHECK(a.st_size == b.st_size);
    CHECK(a.st_mtim.tv_sec == b.st_mtim.tv_sec);
  }
  CHECK(fs::read_symlink(got / "bin/readme") == "../README.md");
  CHECK(fs::read_symlink(got / "dangling") == "/does/not/exist");
  CHECK(fs::is_directory(got / "empty/inside"));
  CHECK(Lstat(got / "main-again.c").st_ino == Lstat(got / "src/main.c").st_ino);
}

}  // namespace

TEST_CASE("trees go up and come back down through the real daemon with every entry kind",
          "[client][trees]") {
  DaemonProcess d;
  Client client({.url = d.url(), .token = d.token()});
  for (TarCompression c : {TarCompression::kNone, TarCompression::kGzip, TarCompression::kZstd}) {
    Scratch s;
    MakeTree(s.root / "src");
    fs::create_directory(s.root / "guest");  // the daemon extracts into an existing directory
    auto up = client.UploadDir((s.root / "src").string(), (s.root / "guest").string(), c);
    REQUIRE(up.ok());
    CheckSame(s.root / "src", s.root / "guest");
    auto down = client.DownloadDir((s.root / "guest").string(), (s.root / "back").string(), c);
    REQUIRE(down.ok());
    CheckSame(s.root / "src", s.root / "back");
  }
}

TEST_CASE("the daemon's refusal of an escaping upload reaches the client as unsafe_path",
          "[client][trees]") {
  Scratch s;
  fs::create_directories(s.root / "root");
  fs::create_directories(s.root / "outside");
  fs::create_symlink("../outside", s.root / "root/escape");
  MakeTree(s.root / "src");
  DaemonProcess d({"--fs-root", (s.root / "root").string()});
  Client client({.url = d.url(), .token = d.token()});
  auto up = client.UploadDir((s.root / "src").string(), (s.root / "root/escape").string());
  REQUIRE_FALSE(up.ok());
  CHECK(up.status().code() == ErrorCode::kUnsafePath);
  CHECK(fs::is_empty(s.root / "outside"));
}
