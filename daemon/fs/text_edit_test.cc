#include "fs/text_edit.h"

#include <catch2/catch.hpp>

#include "fs/unified_diff.h"

using namespace agentd;

namespace {

std::vector<uint64_t> Lines(const Status& s) {
  std::vector<uint64_t> out;
  for (const json::Value& v : s.details().Find("lines")->as_array()) {
    out.push_back(static_cast<uint64_t>(v.as_int()));
  }
  return out;
}

}  // namespace

TEST_CASE("occurrences are found left to right with their line numbers", "[text_edit]") {
  Occurrences o = FindOccurrences("x = 1\ny = x\n\nx x\n", "x");
  CHECK(o.offsets == std::vector<size_t>{0, 10, 13, 15});
  CHECK(o.lines == std::vector<uint64_t>{1, 2, 4, 4});
  CHECK(FindOccurrences("aaaa", "aa").offsets == std::vector<size_t>{0, 2});  // no overlaps
}

TEST_CASE("an edit replaces exactly count occurrences", "[text_edit]") {
  Result<std::string> one = ApplyEdits("a b a\n", {{"b", "B", 1}}, {});
  REQUIRE(one.ok());
  CHECK(*one == "a B a\n");
  Result<std::string> both = ApplyEdits("a b a\n", {{"a", "A", 2}}, {});
  REQUIRE(both.ok());
  CHECK(*both == "A b A\n");
}

TEST_CASE("a count that does not match names the edit, the count found and the lines",
          "[text_edit]") {
  Result<std::string> r =
      ApplyEdits("keep\nfoo()\nbar\nfoo()\n", {{"keep", "kept", 1}, {"foo()", "baz()", 1}}, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kEditMismatch);
  CHECK(r.status().details().Find("edit")->as_int() == 1);
  CHECK(r.status().details().Find("found")->as_int() == 2);
  CHECK(r.status().details().Find("count")->as_int() == 1);
  CHECK(Lines(r.status()) == std::vector<uint64_t>{2, 4});
  Result<std::string> none = ApplyEdits("abc\n", {{"zzz", "y", 1}}, {});
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().details().Find("found")->as_int() == 0);
  CHECK(Lines(none.status()).empty());
}

TEST_CASE("edits apply in order, each to the text the previous one left", "[text_edit]") {
  Result<std::string> r = ApplyEdits("one\n", {{"one", "two", 1}, {"two", "three", 1}}, {});
  REQUIRE(r.ok());
  CHECK(*r == "three\n");
}

TEST_CASE("line edits replace, insert and delete lines of the file as read", "[text_edit]") {
  std::string text = "1\n2\n3\n4\n";
  CHECK(*ApplyEdits(text, {}, {{2, 3, "two-three"}}) == "1\ntwo-three\n4\n");
  CHECK(*ApplyEdits(text, {}, {{1, 0, "zero\n"}}) == "zero\n1\n2\n3\n4\n");
  CHECK(*ApplyEdits(text, {}, {{5, 4, "five"}}) == "1\n2\n3\n4\nfive\n");
  CHECK(*ApplyEdits(text, {}, {{2, 2, ""}}) == "1\n3\n4\n");
  // Two edits, numbered against the lines as read.
  CHECK(*ApplyEdits(text, {}, {{4, 4, "D"}, {1, 1, "A"}}) == "A\n2\n3\nD\n");
}

TEST_CASE("a line edit keeps a last line without a newline that way", "[text_edit]") {
  CHECK(*ApplyEdits("a\nb", {}, {{2, 2, "B"}}) == "a\nB");
  CHECK(*ApplyEdits("a\nb", {}, {{1, 1, "A"}}) == "A\nb");
}

TEST_CASE("a line edit past the end or overlapping another is refused", "[text_edit]") {
  Result<std::string> past = ApplyEdits("a\nb\n", {}, {{2, 3, "x"}});
  REQUIRE_FALSE(past.ok());
  CHECK(past.status().code() == ErrorCode::kEditMismatch);
  CHECK(past.status().details().Find("line_edit")->as_int() == 0);
  CHECK(past.status().details().Find("lines")->as_int() == 2);
  Result<std::string> overlap = ApplyEdits("a\nb\nc\n", {}, {{1, 2, "x"}, {2, 3, "y"}});
  REQUIRE_FALSE(overlap.ok());
  CHECK(overlap.status().code() == ErrorCode::kInvalidRequest);
}

TEST_CASE("the unified diff of one change has one hunk with three lines of context",
          "[unified_diff]") {
  std::string before = "1\n2\n3\n4\n5\n6\n7\n8\n";
  std::string after = "1\n2\n3\n4\nFIVE\n6\n7\n8\n";
  CHECK(UnifiedDiff(before, after, "/f") ==
        "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n");
}

TEST_CASE("changes far apart get hunks of their own", "[unified_diff]") {
  std::string before, after;
  for (int i = 1; i <= 20; ++i) {
    before += std::to_string(i) + "\n";
    after += (i == 2 || i == 19 ? "x" : std::to_string(i)) + "\n";
  }
  std::string diff = UnifiedDiff(before, after, "/f");
  CHECK(diff ==
        "--- a/f\n+++ b/f\n"
        "@@ -1,5 +1,5 @@\n 1\n-2\n+x\n 3\n 4\n 5\n"
        "@@ -16,5 +16,5 @@\n 16\n 17\n 18\n-19\n+x\n 20\n");
}

TEST_CASE("the diff marks a last line without a newline and insertions", "[unified_diff]") {
  CHECK(UnifiedDiff("a", "b", "/f") ==
        "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n"
        "\\ No newline at end of file\n");
  CHECK(UnifiedDiff("", "new\n", "/f") == "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+new\n");
  CHECK(UnifiedDiff("same\n", "same\n", "/f").empty());
}
