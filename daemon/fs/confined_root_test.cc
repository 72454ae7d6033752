#include "fs/confined_root.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "testing/temp_dir.h"

using namespace agentd;
using agentd::testing::TempDir;

namespace {

// A tree with every kind of symlink the resolution has to judge:
//   root/dir/file          "inside"
//   root/dir/up -> ..      relative, stays inside
//   root/in -> dir/file    relative, inside
//   root/out -> ../outside relative, climbs out
//   root/abs -> <abs path of root/dir/file>
//   root/loop -> loop
//   outside                next to root, must never be reached
struct Tree {
  TempDir tmp;
  std::string root;
  Tree() {
    tmp.Mkdir("root");
    tmp.Mkdir("root/dir");
    tmp.Write("root/dir/file", "inside");
    tmp.Write("outside", "secret");
    tmp.Symlink("..", "root/dir/up");
    tmp.Symlink("dir/file", "root/in");
    tmp.Symlink("../outside", "root/out");
    tmp.Symlink(tmp / "root/dir/file", "root/abs");
    tmp.Symlink("loop", "root/loop");
    root = tmp / "root";
  }
};

RelPath Rel(const std::vector<std::string>& parts) {
  RelPath r;
  r.parts = parts;
  r.display = "/test";
  return r;
}

std::string ReadAll(int fd) {
  char buf[64];
  ssize_t n = ::pread(fd, buf, sizeof(buf), 0);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

ConfinedRoot Open(const std::string& dir, ConfinedRoot::Mode mode, bool openat2) {
  auto root = ConfinedRoot::Open(dir, mode);
  REQUIRE(root.ok());
  root->set_use_openat2(openat2);
  return std::move(*root);
}

}  // namespace

TEST_CASE("beneath a root, symlinks that stay inside are followed", "[confine]") {
  Tree t;
  for (bool openat2 : {true, false}) {
    INFO("openat2 " << openat2);
    ConfinedRoot root = Open(t.root, ConfinedRoot::Mode::kBeneath, openat2);
    auto fd = root.OpenAt(Rel({"in"}), O_RDONLY);
    REQUIRE(fd.ok());
    CHECK(ReadAll(fd->get()) == "inside");
    fd = root.OpenAt(Rel({"dir", "up", "dir", "file"}), O_RDONLY);
    REQUIRE(fd.ok());
    CHECK(ReadAll(fd->get()) == "inside");
    auto canon = root.Canonical(Rel({"dir", "up", "in"}), false);
    REQUIRE(canon.ok());
    CHECK(canon->parts == std::vector<std::string>{"dir", "file"});
  }
}

TEST_CASE("beneath a root, every escape is refused as unsafe_path", "[confine][security]") {
  Tree t;
  for (bool openat2 : {true, false}) {
    INFO("openat2 " << openat2);
    ConfinedRoot root = Open(t.root, ConfinedRoot::Mode::kBeneath, openat2);
    for (auto parts : std::vector<std::vector<std::string>>{
             {"out"}, {"abs"}, {"dir", "up", "..", "outside"}, {"dir", "..", ".."}}) {
      auto fd = root.OpenAt(Rel(parts), O_RDONLY);
      REQUIRE_FALSE(fd.ok());
      CHECK(fd.status().code() == ErrorCode::kUnsafePath);
      CHECK_FALSE(root.Canonical(Rel(parts), true).ok());
    }
    auto loop = root.OpenAt(Rel({"loop"}), O_RDONLY);
    REQUIRE_FALSE(loop.ok());
    CHECK(loop.status().code() == ErrorCode::kUnsafePath);  // ELOOP
  }
}

TEST_CASE("O_NOFOLLOW opens the symlink itself, and creation through one is confined",
          "[confine][security]") {
  Tree t;
  for (bool openat2 : {true, false}) {
    INFO("openat2 " << openat2);
    ConfinedRoot root = Open(t.root, ConfinedRoot::Mode::kBeneath, openat2);
    auto link = root.OpenAt(Rel({"out"}), O_PATH | O_NOFOLLOW);
    REQUIRE(link.ok());
    struct stat st;
    REQUIRE(::fstat(link->get(), &st) == 0);
    CHECK(S_ISLNK(st.st_mode));
    t.tmp.Symlink("../created-outside", "root/dangling-out");
    auto created = root.OpenAt(Rel({"dangling-out"}), O_WRONLY | O_CREAT, 0600);
    CHECK_FALSE(created.ok());
    CHECK_FALSE(t.tmp.Exists("created-outside"));
    ::unlink((t.root + "/dangling-out").c_str());
  }
}

TEST_CASE("in-root mode resolves absolute symlinks from the root", "[confine]") {
  Tree t;
  t.tmp.Symlink("/dir/file", "root/rooted");
  for (bool openat2 : {true, false}) {
    INFO("openat2 " << openat2);
    ConfinedRoot root = Open(t.root, ConfinedRoot::Mode::kInRoot, openat2);
    auto fd = root.OpenAt(Rel({"rooted"}), O_RDONLY);
    REQUIRE(fd.ok());
    CHECK(ReadAll(fd->get()) == "inside");
    // ".." at the root stays at the root, as in a chroot.
    fd = root.OpenAt(Rel({"..", "..", "dir", "file"}), O_RDONLY);
    REQUIRE(fd.ok());
    CHECK(ReadAll(fd->get()) == "inside");
    auto canon = root.Canonical(Rel({"rooted"}), false);
    REQUIRE(canon.ok());
    CHECK(canon->parts == std::vector<std::string>{"dir", "file"});
  }
}

TEST_CASE("procfs magic links are never followed", "[confine][security]") {
  struct stat st;
  if (::stat("/proc/self/root", &st) != 0) return;  // no procfs here
  for (bool openat2 : {true, false}) {
    INFO("openat2 " << openat2);
    ConfinedRoot root = Open("/", ConfinedRoot::Mode::kInRoot, openat2);
    auto fd = root.OpenAt(Rel({"proc", "self", "root", "etc"}), O_PATH);
    REQUIRE_FALSE(fd.ok());
    CHECK(fd.status().code() == ErrorCode::kUnsafePath);
    // An ordinary procfs symlink ("self" -> "<pid>") is fine.
    CHECK(root.OpenAt(Rel({"proc", "self", "status"}), O_RDONLY).ok());
  }
}

TEST_CASE("parents and canonical paths with a missing leaf", "[confine]") {
  Tree t;
  for (bool openat2 : {true, false}) {
    INFO("openat2 " << openat2);
    ConfinedRoot root = Open(t.root, ConfinedRoot::Mode::kBeneath, openat2);
    auto parent = root.OpenParent(Rel({"dir", "new"}));
    REQUIRE(parent.ok());
    CHECK(::faccessat(parent->get(), "file", F_OK, AT_SYMLINK_NOFOLLOW) == 0);
    CHECK_FALSE(root.OpenParent(Rel({})).ok());
    CHECK(root.Canonical(Rel({"dir", "up", "new"}), true)->parts ==
          std::vector<std::string>{"new"});
    auto missing = root.Canonical(Rel({"nope", "new"}), true);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.status().code() == ErrorCode::kNotFound);
    CHECK(root.Canonical(Rel({"new"}), false).status().code() == ErrorCode::kNotFound);
  }
}
