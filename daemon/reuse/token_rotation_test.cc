#include "reuse/token_rotation.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "auth/rotated_token.h"
#include "sys/read_file.h"
#include "testing/temp_dir.h"

using namespace agentd;
using agentd::testing::TempDir;

namespace {

// A token file "token" and a state dir "state" in a fresh directory.
struct Places {
  TempDir d;
  std::string file = d / "token";
  std::string state = d / "state";
  std::string record = RotatedTokenPath(state);
  Places() {
    REQUIRE(::mkdir(state.c_str(), 0700) == 0);
    REQUIRE(WriteFileAtomically(file, "old\n").ok());
  }
};

}  // namespace

TEST_CASE("a token rotation changes nothing until its commit, then the file holds the token",
          "[token_rotation]") {
  Places p;
  REQUIRE(WriteFileAtomically(p.record, "a stale record").ok());
  bool replaceable = true;
  TokenRotation r(p.file, p.state, "next", replaceable);
  REQUIRE(r.Stage().ok());
  CHECK(p.d.Read("token") == "old\n");
  REQUIRE(r.Commit().ok());
  CHECK(p.d.Read("token") == "next\n");
  CHECK_FALSE(p.d.Exists("token.tmp"));
  CHECK_FALSE(p.d.Exists("state/rotated-token"));  // the file took it: the record goes
  CHECK(replaceable);
}

TEST_CASE("a token file a rename cannot cover sends the token to the state dir at the commit",
          "[token_rotation]") {
  Places p;
  REQUIRE(::unlink(p.file.c_str()) == 0);
  REQUIRE(::mkdir(p.file.c_str(), 0700) == 0);  // a rename over it fails, as over a bind mount
  bool replaceable = true;
  TokenRotation r(p.file, p.state, "next", replaceable);
  REQUIRE(r.Stage().ok());
  REQUIRE(r.Commit().ok());
  CHECK(p.d.Read("state/rotated-token").ends_with("\nnext\n"));
  CHECK_FALSE(replaceable);  // later rotations skip the file
  CHECK_FALSE(p.d.Exists("token.tmp"));

  // The next rotation stages into the record directly.
  TokenRotation again(p.file, p.state, "after", replaceable);
  REQUIRE(again.Stage().ok());
  CHECK_FALSE(p.d.Exists("token.tmp"));
  CHECK(p.d.Read("state/rotated-token").ends_with("\nnext\n"));
  REQUIRE(again.Commit().ok());
  CHECK(p.d.Read("state/rotated-token").ends_with("\nafter\n"));
}

TEST_CASE("a token rotation that cannot stage anywhere fails and leaves both places as they were",
          "[token_rotation]") {
  TempDir d;
  std::string state = d.path() + "/state";
  REQUIRE(::mkdir(state.c_str(), 0700) == 0);
  std::string file = d.path() + "/missing-dir/token";  // no directory, no identity
  bool replaceable = true;
  TokenRotation r(file, state, "next", replaceable);
  Status staged = r.Stage();
  REQUIRE_FALSE(staged.ok());
  CHECK(staged.code() == ErrorCode::kIoError);
  CHECK(staged.message().find(file) != std::string::npos);
  CHECK_FALSE(d.Exists("state/rotated-token"));
  CHECK_FALSE(d.Exists("state/rotated-token.tmp"));
  CHECK(replaceable);
}

TEST_CASE("a commit that fails in both places leaves the token in force and no temporaries",
          "[token_rotation]") {
  Places p;
  REQUIRE(::unlink(p.file.c_str()) == 0);
  REQUIRE(::mkdir(p.file.c_str(), 0700) == 0);
  REQUIRE(::mkdir(p.record.c_str(), 0700) == 0);  // the record cannot be renamed over either
  bool replaceable = true;
  TokenRotation r(p.file, p.state, "next", replaceable);
  REQUIRE(r.Stage().ok());
  Status committed = r.Commit();
  REQUIRE_FALSE(committed.ok());
  CHECK(committed.code() == ErrorCode::kIoError);
  CHECK_FALSE(p.d.Exists("token.tmp"));
  CHECK_FALSE(p.d.Exists("state/rotated-token.tmp"));
  CHECK(replaceable);
}

TEST_CASE("a staged token never committed is removed with its rotation", "[token_rotation]") {
  Places p;
  bool replaceable = true;
  {
    TokenRotation r(p.file, p.state, "next", replaceable);
    REQUIRE(r.Stage().ok());
    CHECK(p.d.Exists("token.tmp"));
  }
  CHECK_FALSE(p.d.Exists("token.tmp"));
  CHECK(p.d.Read("token") == "old\n");
}
