#include "exec/exec_store.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "sys/read_file.h"
#include "testing/temp_dir.h"

using namespace agentd;
using agentd::testing::TempDir;

TEST_CASE("exec metadata is replaced whole and read back", "[exec_store]") {
  TempDir d;
  ExecStore store(d / "execs");
  REQUIRE(store.Open().ok());
  std::string dir = store.DirFor("meta-1");
  REQUIRE(store.CreateDir(dir).ok());
  ExecInfo info;
  info.id = "meta-1";
  REQUIRE(store.WriteMeta(dir, info, "fp", std::nullopt).ok());
  REQUIRE(store.WriteMeta(dir, info, "fp", int64_t{5}).ok());
  std::vector<StoredExec> all = store.LoadAll();
  REQUIRE(all.size() == 1);
  CHECK(all[0].info.id == "meta-1");
  CHECK(all[0].acked_at_ms == 5);
  CHECK_FALSE(all[0].stdin_streamed_next);  // as in records from before it was kept
  REQUIRE(store.WriteMeta(dir, info, "fp", std::nullopt, {}, {}, uint64_t{7}).ok());
  all = store.LoadAll();
  REQUIRE(all.size() == 1);
  CHECK(all[0].stdin_streamed_next == uint64_t{7});
}

// Regression (issue 19): the store's own copy of the atomic write left
// meta.json.tmp behind when the rename failed.
TEST_CASE("a failed metadata write leaves no temporary file", "[exec_store]") {
  TempDir d;
  ExecStore store(d / "execs");
  REQUIRE(store.Open().ok());
  std::string dir = store.DirFor("meta-2");
  REQUIRE(store.CreateDir(dir).ok());
  REQUIRE(::mkdir((dir + "/meta.json").c_str(), 0700) == 0);  // the rename cannot replace it
  ExecInfo info;
  info.id = "meta-2";
  CHECK_FALSE(store.WriteMeta(dir, info, "fp", std::nullopt).ok());
  struct stat st;
  CHECK(::lstat((dir + "/meta.json.tmp").c_str(), &st) != 0);
}
