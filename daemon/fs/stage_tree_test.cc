#include "agentd/trees/stage_tree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "testing/temp_dir.h"

using namespace agentd;
using agentd::testing::TempDir;

namespace {

RelPath Member(const char* name) {
  auto r = CheckMemberName(name);
  REQUIRE(r.ok());
  return *r;
}

struct Target {
  TempDir tmp;
  UniqueFd fd;
  Target() {
    tmp.Mkdir("target");
    tmp.Write("outside", "untouched");
    fd.reset(::open((tmp / "target").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  }
  StageTree Stage() {
    auto s = StageTree::Create(fd.get(), "/target", StageOptions{});
    REQUIRE(s.ok());
    return std::move(*s);
  }
  void AddFile(StageTree& s, const char* name, const std::string& data, uint32_t mode = 0644) {
    auto f = s.BeginFile(Member(name));
    REQUIRE(f.ok());
    REQUIRE(::write(f->get(), data.data(), data.size()) == static_cast<ssize_t>(data.size()));
    REQUIRE(
        s.FinishFile(f->get(), Member(name), data.size(), data.size(), mode, std::nullopt).ok());
  }
  // Entries of the target, so a test can tell that nothing was left.
  int Count() {
    int n = 0;
    for (auto& e : std::filesystem::directory_iterator(tmp / "target")) n += !e.path().empty();
    return n;
  }
};

}  // namespace

TEST_CASE("a staged tree appears only on commit", "[stage]") {
  Target t;
  {
    StageTree s = t.Stage();
    t.AddFile(s, "a/b/file", "data");
    REQUIRE(s.AddDir(Member("empty"), 0750, std::nullopt).ok());
    CHECK_FALSE(t.tmp.Exists("target/a"));
    REQUIRE(s.Commit().ok());
  }
  CHECK(t.tmp.Read("target/a/b/file") == "data");
  struct stat st;
  REQUIRE(::stat((t.tmp / "target/empty").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0750);
  REQUIRE(::stat((t.tmp / "target/a").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0755);  // implicit parents
  CHECK(t.Count() == 2);                // no staging directory left behind
}

TEST_CASE("an abandoned stage leaves nothing behind", "[stage]") {
  Target t;
  {
    StageTree s = t.Stage();
    t.AddFile(s, "x/y", "data");
    CHECK(t.Count() == 1);  // the staging directory
  }
  CHECK(t.Count() == 0);
}

TEST_CASE("a member is never written through a symlink, even one pointing inside",
          "[stage][security]") {
  Target t;
  StageTree s = t.Stage();
  REQUIRE(s.AddSymlink(Member("escape"), "../../outside-dir", std::nullopt).ok());
  REQUIRE(s.AddDir(Member("real"), 0755, std::nullopt).ok());
  REQUIRE(s.AddSymlink(Member("inner"), "real", std::nullopt).ok());
  for (const char* name : {"escape/file", "inner/file"}) {
    auto f = s.BeginFile(Member(name));
    REQUIRE_FALSE(f.ok());
    CHECK(f.status().code() == ErrorCode::kUnsafePath);
    CHECK(f.status().details().Find("member")->as_string() == name);
  }
  CHECK(s.AddDir(Member("escape/sub"), 0755, std::nullopt).code() == ErrorCode::kUnsafePath);
}

TEST_CASE("hard links may only name earlier files of the same archive", "[stage][security]") {
  Target t;
  StageTree s = t.Stage();
  t.AddFile(s, "f", "data");
  REQUIRE(s.AddHardlink(Member("g"), Member("f")).ok());
  CHECK(s.AddHardlink(Member("h"), Member("not-there")).code() == ErrorCode::kUnsafePath);
  CHECK(s.AddHardlink(Member("h"), Member("outside")).code() == ErrorCode::kUnsafePath);
  REQUIRE(s.Commit().ok());
  struct stat a, b;
  REQUIRE(::stat((t.tmp / "target/f").c_str(), &a) == 0);
  REQUIRE(::stat((t.tmp / "target/g").c_str(), &b) == 0);
  CHECK(a.st_ino == b.st_ino);
}

TEST_CASE("a later member replaces an earlier one of the same name", "[stage]") {
  Target t;
  StageTree s = t.Stage();
  t.AddFile(s, "x", "first");
  t.AddFile(s, "x", "second");
  t.AddFile(s, "d/inner", "gone");
  REQUIRE(s.AddSymlink(Member("d"), "x", std::nullopt).ok());
  REQUIRE(s.Commit().ok());
  CHECK(t.tmp.Read("target/x") == "second");
  char buf[8];
  CHECK(::readlink((t.tmp / "target/d").c_str(), buf, sizeof(buf)) == 1);
}

TEST_CASE("commit replaces a symlink in the target instead of following it", "[stage][security]") {
  Target t;
  t.tmp.Mkdir("elsewhere");
  t.tmp.Symlink(t.tmp / "elsewhere", "target/sub");
  t.tmp.Write("target/keep", "kept");
  t.tmp.Mkdir("target/merge");
  t.tmp.Write("target/merge/old", "old");
  {
    StageTree s = t.Stage();
    t.AddFile(s, "sub/file", "mine");
    t.AddFile(s, "merge/new", "new");
    REQUIRE(s.Commit().ok());
  }
  struct stat st;
  REQUIRE(::lstat((t.tmp / "target/sub").c_str(), &st) == 0);
  CHECK(S_ISDIR(st.st_mode));
  CHECK(t.tmp.Read("target/sub/file") == "mine");
  CHECK_FALSE(t.tmp.Exists("elsewhere/file"));
  CHECK(t.tmp.Read("target/keep") == "kept");
  CHECK(t.tmp.Read("target/merge/old") == "old");
  CHECK(t.tmp.Read("target/merge/new") == "new");
}

TEST_CASE("read-only directories are filled first and get their mode last", "[stage]") {
  Target t;
  {
    StageTree s = t.Stage();
    REQUIRE(s.AddDir(Member("ro"), 0555, timespec{1000000000, 0}).ok());
    t.AddFile(s, "ro/file", "data");
    REQUIRE(s.Commit().ok());
  }
  struct stat st;
  REQUIRE(::stat((t.tmp / "target/ro").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0555);
  CHECK(st.st_mtim.tv_sec == 1000000000);
  CHECK(t.tmp.Read("target/ro/file") == "data");
}
