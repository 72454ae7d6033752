#include "fs/lexical_path.h"

#include <catch2/catch.hpp>

using namespace agentd;

namespace {
std::vector<std::string> Parts(const PathPolicy& p, const char* path) {
  auto r = p.Check(path);
  REQUIRE(r.ok());
  return r->parts;
}
ErrorCode Refusal(const PathPolicy& p, const char* path) {
  auto r = p.Check(path);
  REQUIRE_FALSE(r.ok());
  return r.status().code();
}
}  // namespace

TEST_CASE("lexical check normalizes slashes and dots under the root /", "[path]") {
  PathPolicy root("/");
  CHECK(root.root() == "/");
  CHECK(Parts(root, "/") == std::vector<std::string>{});
  CHECK(Parts(root, "/a//b/./c/") == std::vector<std::string>{"a", "b", "c"});
  CHECK(Parts(root, "/a/b/../c") == std::vector<std::string>{"a", "b", "..", "c"});
  CHECK(root.Display(*root.Check("/x/y")) == "/x/y");
}

TEST_CASE("lexical check refuses relative paths, NUL and climbing above the root", "[path]") {
  PathPolicy root("/");
  CHECK(Refusal(root, "") == ErrorCode::kInvalidRequest);
  CHECK(Refusal(root, "a/b") == ErrorCode::kInvalidRequest);
  auto nul = root.Check(std::string_view("/a\0b", 4));
  CHECK(nul.status().code() == ErrorCode::kInvalidRequest);
  CHECK(Refusal(root, "/..") == ErrorCode::kUnsafePath);
  CHECK(Refusal(root, "/a/../../b") == ErrorCode::kUnsafePath);
  auto r = root.Check("/a/../..");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().details().Find("path")->as_string() == "/a/../..");
}

TEST_CASE("lexical check confines paths to an --fs-root prefix by components", "[path]") {
  PathPolicy root("/srv//data/");
  CHECK(root.root() == "/srv/data");
  CHECK(Parts(root, "/srv/data") == std::vector<std::string>{});
  CHECK(Parts(root, "/srv/./data/x") == std::vector<std::string>{"x"});
  CHECK(Refusal(root, "/srv/database/x") == ErrorCode::kUnsafePath);
  CHECK(Refusal(root, "/srv") == ErrorCode::kUnsafePath);
  CHECK(Refusal(root, "/etc/passwd") == ErrorCode::kUnsafePath);
  CHECK(Refusal(root, "/srv/data/..") == ErrorCode::kUnsafePath);
  CHECK(Refusal(root, "/srv/data/a/../../data/x") == ErrorCode::kUnsafePath);
  CHECK(Refusal(root, "/srv/x/../data/y") == ErrorCode::kUnsafePath);
  CHECK(Parts(root, "/srv/data/a/../b") == std::vector<std::string>{"a", "..", "b"});
  CHECK(root.Display(*root.Check("/srv/data/a/b")) == "/srv/data/a/b");
}

TEST_CASE("archive member names: relative, no dot-dot at all, no NUL", "[path][tar]") {
  CHECK(CheckMemberName("a/b").ok());
  CHECK(CheckMemberName("./a//b/")->parts == std::vector<std::string>{"a", "b"});
  CHECK(CheckMemberName("./")->is_root());
  CHECK(CheckMemberName(".")->is_root());
  for (const char* bad : {"/etc/passwd", "../x", "a/../b", "a/..", "..", ""}) {
    INFO(bad);
    auto r = CheckMemberName(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kUnsafePath);
    CHECK(r.status().details().Find("member") != nullptr);
  }
  CHECK(CheckMemberName(std::string_view("a\0b", 3)).status().code() == ErrorCode::kUnsafePath);
  CHECK(CheckMemberName("...")->parts == std::vector<std::string>{"..."});
  CHECK(CheckMemberName("a..b/c")->parts.size() == 2);
}

TEST_CASE("relpath parent and child keep a display path for errors", "[path]") {
  PathPolicy root("/");
  RelPath p = *root.Check("/a/b/c");
  CHECK(p.Parent().display == "/a/b");
  CHECK(p.Parent().parts == std::vector<std::string>{"a", "b"});
  CHECK(p.Child("d").display == "/a/b/c/d");
  CHECK(p.leaf() == "c");
  CHECK(root.Check("/a")->Parent().display == "/");
}
