#include "search/ignore_rules.h"

#include <catch2/catch.hpp>

using namespace agentd;

namespace {

IgnoreVerdict Decide(const char* content, const char* path, bool is_dir = false) {
  IgnoreRules r;
  r.Add(content);
  return r.Decide(path, is_dir);
}

}  // namespace

TEST_CASE("a pattern without a slash matches a name at any depth") {
  CHECK(Decide("*.o\n", "a/b/x.o") == IgnoreVerdict::kIgnore);
  CHECK(Decide("*.o\n", "x.c") == IgnoreVerdict::kNone);
}

TEST_CASE("a pattern with a slash is anchored to the ignore file's directory") {
  CHECK(Decide("/build\n", "build", true) == IgnoreVerdict::kIgnore);
  CHECK(Decide("/build\n", "src/build", true) == IgnoreVerdict::kNone);
  CHECK(Decide("doc/*.txt\n", "doc/a.txt") == IgnoreVerdict::kIgnore);
  CHECK(Decide("doc/*.txt\n", "x/doc/a.txt") == IgnoreVerdict::kNone);
  CHECK(Decide("**/gen/*.c\n", "a/b/gen/x.c") == IgnoreVerdict::kIgnore);
}

TEST_CASE("a trailing slash matches directories only") {
  CHECK(Decide("out/\n", "out", true) == IgnoreVerdict::kIgnore);
  CHECK(Decide("out/\n", "out", false) == IgnoreVerdict::kNone);
  CHECK(Decide("out/\n", "a/out", true) == IgnoreVerdict::kIgnore);
}

TEST_CASE("a negation re-includes and the last matching line wins") {
  CHECK(Decide("*.log\n!keep.log\n", "keep.log") == IgnoreVerdict::kInclude);
  CHECK(Decide("*.log\n!keep.log\n", "other.log") == IgnoreVerdict::kIgnore);
  CHECK(Decide("!keep.log\n*.log\n", "keep.log") == IgnoreVerdict::kIgnore);
}

TEST_CASE("comments, blank lines, escapes and trailing spaces") {
  CHECK(Decide("# x\n\n", "# x") == IgnoreVerdict::kNone);
  CHECK(Decide("\\#x\n", "#x") == IgnoreVerdict::kIgnore);
  CHECK(Decide("\\!x\n", "!x") == IgnoreVerdict::kIgnore);
  CHECK(Decide("a.txt   \n", "a.txt") == IgnoreVerdict::kIgnore);
  CHECK(Decide("a\\ \n", "a ") == IgnoreVerdict::kIgnore);
  CHECK(Decide("a.txt\r\n", "a.txt") == IgnoreVerdict::kIgnore);
}

TEST_CASE("a deeper ignore file's decision wins over a shallower one's") {
  auto top = std::make_shared<IgnoreRules>();
  top->Add("*.gen\n");
  auto sub = std::make_shared<IgnoreRules>();
  sub->Add("!keep.gen\n");
  IgnoreStack stack;
  stack.Push({top, "", ""});
  stack.Push({sub, "pkg", ""});
  CHECK(stack.Ignored("pkg/x.gen", false));
  CHECK_FALSE(stack.Ignored("pkg/keep.gen", false));
  CHECK(stack.Ignored("keep.gen", false) == true);  // the sub file is not in force here
}

TEST_CASE("an ancestor's anchored rule sees paths from its own directory") {
  auto repo = std::make_shared<IgnoreRules>();
  repo->Add("/src/gen/\n");
  IgnoreStack stack;
  stack.Push({repo, "", "src"});  // the walk starts at <repo>/src
  CHECK(stack.Ignored("gen", true));
  CHECK_FALSE(stack.Ignored("lib/gen", true));
}
