#include "sys/read_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "testing/temp_dir.h"

using namespace agentd;
using agentd::testing::TempDir;

namespace {

bool PathExists(const std::string& p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("an atomic write replaces the file whole, mode 0600, no temporary left", "[atomic]") {
  TempDir d;
  std::string f = d.path() + "/meta.json";
  REQUIRE(WriteFileAtomically(f, "old").ok());
  REQUIRE(WriteFileAtomically(f, "new contents").ok());
  CHECK(*ReadFileToString(f, 1024) == "new contents");
  struct stat st;
  REQUIRE(::stat(f.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  CHECK_FALSE(PathExists(f + ".tmp"));
}

TEST_CASE("a write synced by the caller is in place and hands back the open file", "[atomic]") {
  TempDir d;
  std::string f = d.path() + "/meta.json";
  Result<UniqueFd> fd = ReplaceFile(f, "{}\n", SyncMode::kByCaller);
  REQUIRE(fd.ok());
  CHECK(*fd);
  CHECK(::fsync(fd->get()) == 0);
  CHECK(*ReadFileToString(f, 1024) == "{}\n");
  CHECK_FALSE(PathExists(f + ".tmp"));
}

// Regression (issue 19): the exec store's own copy of this write left its
// temporary file behind when the rename failed.
TEST_CASE("a failed atomic write leaves the target as it was and no temporary", "[atomic]") {
  TempDir d;
  std::string target = d.path() + "/dir";
  REQUIRE(::mkdir(target.c_str(), 0700) == 0);  // a directory: rename over it fails
  for (SyncMode mode : {SyncMode::kBeforeRename, SyncMode::kByCaller}) {
    Result<UniqueFd> r = ReplaceFile(target, "data", mode);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find(target) != std::string::npos);
    CHECK_FALSE(PathExists(target + ".tmp"));
    struct stat st;
    REQUIRE(::stat(target.c_str(), &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
  }
  CHECK_FALSE(ReplaceFile(d.path() + "/missing/x", "data", SyncMode::kByCaller).ok());
}

TEST_CASE("a staged write leaves the target as it was until it is finished", "[atomic]") {
  TempDir d;
  std::string f = d.path() + "/token";
  REQUIRE(WriteFileAtomically(f, "old\n").ok());
  Result<UniqueFd> staged = ReplaceFile(f, "new\n", SyncMode::kStaged);
  REQUIRE(staged.ok());
  CHECK(*ReadFileToString(f, 1024) == "old\n");
  CHECK(*ReadFileToString(f + ".tmp", 1024) == "new\n");
  REQUIRE(FinishReplace(f, std::move(*staged)).ok());
  CHECK(*ReadFileToString(f, 1024) == "new\n");
  CHECK_FALSE(PathExists(f + ".tmp"));

  Result<UniqueFd> dropped = ReplaceFile(f, "never\n", SyncMode::kStaged);
  REQUIRE(dropped.ok());
  DiscardStaged(f);
  CHECK(*ReadFileToString(f, 1024) == "new\n");
  CHECK_FALSE(PathExists(f + ".tmp"));
}

TEST_CASE("a staged write whose rename fails leaves no temporary", "[atomic]") {
  TempDir d;
  std::string target = d.path() + "/dir";
  REQUIRE(::mkdir(target.c_str(), 0700) == 0);  // rename over it fails
  Result<UniqueFd> staged = ReplaceFile(target, "data", SyncMode::kStaged);
  REQUIRE(staged.ok());  // the directory beside it takes the temporary
  Status finished = FinishReplace(target, std::move(*staged));
  REQUIRE_FALSE(finished.ok());
  CHECK(finished.message().find(target) != std::string::npos);
  CHECK_FALSE(PathExists(target + ".tmp"));
}
