#include "fs/precondition.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "agentd/trees/unique_fd.h"
#include "testing/temp_dir.h"

using namespace agentd;
using agentd::testing::TempDir;

namespace {

Precondition Parse(const char* if_match, const char* if_none_match = nullptr) {
  std::string m = if_match ? if_match : "";
  std::string n = if_none_match ? if_none_match : "";
  Result<Precondition> pre =
      ParsePrecondition(if_match ? &m : nullptr, if_none_match ? &n : nullptr);
  REQUIRE(pre.ok());
  return *pre;
}

Status Check(const TempDir& dir, const Precondition& pre, const std::string& leaf) {
  static FileTags tags;
  UniqueFd fd(::open(dir.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  return CheckPrecondition(pre, fd.get(), leaf, tags, leaf);
}

}  // namespace

TEST_CASE("If-Match lists quoted, weak and bare tags", "[precondition]") {
  Precondition pre = Parse("\"sha256:aa\", W/\"sha256:bb\" ,sha256:cc");
  CHECK(pre.if_match == std::vector<std::string>{"sha256:aa", "W/sha256:bb", "sha256:cc"});
  CHECK(IfMatchAccepts(pre, "\"sha256:aa\""));
  CHECK(IfMatchAccepts(pre, "\"sha256:cc\""));
  CHECK_FALSE(IfMatchAccepts(pre, "\"sha256:bb\""));  // weak tags never match
  CHECK(Parse("*").if_match == std::vector<std::string>{"*"});
}

TEST_CASE("malformed preconditions are invalid_request naming the header", "[precondition]") {
  std::string empty = " , ";
  std::string quote = "\"a\"b\"";
  std::string tagged = "\"x\"";
  for (const std::string* bad : {&empty, &quote}) {
    Result<Precondition> pre = ParsePrecondition(bad, nullptr);
    REQUIRE_FALSE(pre.ok());
    CHECK(pre.status().code() == ErrorCode::kInvalidRequest);
    CHECK(pre.status().details().Find("field")->as_string() == "If-Match");
  }
  Result<Precondition> none = ParsePrecondition(nullptr, &tagged);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().details().Find("field")->as_string() == "If-None-Match");
}

TEST_CASE("If-Match holds for the file's current tag and fails with it otherwise",
          "[precondition]") {
  TempDir dir;
  dir.Write("f", "one\n");
  std::string tag = FileTags::OfBytes("one\n");
  CHECK(Check(dir, Parse(tag.c_str()), "f").ok());
  Status stale = Check(dir, Parse("\"sha256:0000\""), "f");
  CHECK(stale.code() == ErrorCode::kPreconditionFailed);
  CHECK(stale.details().Find("etag")->as_string() == tag);
  CHECK(stale.details().Find("exists")->as_bool());
}

TEST_CASE("If-Match on an absent file fails saying it does not exist", "[precondition]") {
  TempDir dir;
  Status absent = Check(dir, Parse("*"), "missing");
  CHECK(absent.code() == ErrorCode::kPreconditionFailed);
  CHECK_FALSE(absent.details().Find("exists")->as_bool());
  CHECK(absent.details().Find("etag")->is_null());
}

TEST_CASE("If-None-Match: * holds only while nothing is there", "[precondition]") {
  TempDir dir;
  Precondition create = Parse(nullptr, "*");
  CHECK(Check(dir, create, "new").ok());
  dir.Write("new", "x");
  Status taken = Check(dir, create, "new");
  CHECK(taken.code() == ErrorCode::kPreconditionFailed);
  CHECK(taken.details().Find("etag")->as_string() == FileTags::OfBytes("x"));
}

TEST_CASE("If-Match with a tag fails on a directory", "[precondition]") {
  TempDir dir;
  dir.Mkdir("d");
  Status s = Check(dir, Parse("\"sha256:00\""), "d");
  CHECK(s.code() == ErrorCode::kPreconditionFailed);
  CHECK(s.details().Find("etag")->is_null());
}
