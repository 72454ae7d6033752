#include "search/output_matcher.h"

#include <catch2/catch.hpp>

using namespace agentd;

namespace {

std::shared_ptr<const LineMatcher> Compile(const char* pattern) {
  auto m = LineMatcher::Compile(pattern, {.partial = true});
  REQUIRE(m.ok());
  return *m;
}

// Feeds `chunks` one by one (the last with at_end when `ends`) and returns
// the first outcome that is not kNeedMore, or the last one.
OutputMatcher::Outcome FeedAll(OutputMatcher& m, std::vector<std::string_view> chunks, bool ends) {
  OutputMatcher::Outcome last;
  for (size_t i = 0; i < chunks.size(); ++i) {
    auto r = m.Feed(m.fed_to(), chunks[i], ends && i + 1 == chunks.size());
    REQUIRE(r.ok());
    last = *r;
    if (last.kind != OutputMatcher::Outcome::kNeedMore) break;
  }
  return last;
}

}  // namespace

TEST_CASE("a match split across two chunks is found at its stream offset") {
  OutputMatcher m(Compile("ready"), 0, 1 << 20);
  auto out = FeedAll(m, {"booting\nrea", "dy\n"}, false);
  REQUIRE(out.kind == OutputMatcher::Outcome::kMatched);
  CHECK(out.text == "ready");
  CHECK(out.match_from == 8);
  CHECK(out.match_to == 13);
}

TEST_CASE("a match split byte by byte is found") {
  OutputMatcher m(Compile("listening on port \\d+\\n"), 0, 1 << 20);
  std::string text = "x\nlistening on port 8080\nmore";
  OutputMatcher::Outcome out;
  for (char c : text) {
    auto r = m.Feed(m.fed_to(), std::string_view(&c, 1), false);
    REQUIRE(r.ok());
    out = *r;
    if (out.kind != OutputMatcher::Outcome::kNeedMore) break;
  }
  REQUIRE(out.kind == OutputMatcher::Outcome::kMatched);
  CHECK(out.text == "listening on port 8080\n");
  CHECK(out.match_from == 2);
}

TEST_CASE("a match that could still grow waits for the next chunk or the end") {
  OutputMatcher m(Compile("port \\d+"), 0, 1 << 20);
  auto r = m.Feed(0, "port 80", false);
  REQUIRE(r.ok());
  CHECK(r->kind == OutputMatcher::Outcome::kNeedMore);
  CHECK(m.resume_from() == 0);
  r = m.Feed(m.fed_to(), "80\n", false);
  REQUIRE(r.ok());
  REQUIRE(r->kind == OutputMatcher::Outcome::kMatched);
  CHECK(r->text == "port 8080");

  OutputMatcher at_end(Compile("port \\d+"), 0, 1 << 20);
  auto out = FeedAll(at_end, {"port 80", "80"}, true);
  REQUIRE(out.kind == OutputMatcher::Outcome::kMatched);
  CHECK(out.text == "port 8080");
}

TEST_CASE("dollar means a line end, and the end of the text only at the stream's end") {
  OutputMatcher m(Compile("done$"), 0, 1 << 20);
  auto r = m.Feed(0, "done", false);
  REQUIRE(r.ok());
  CHECK(r->kind == OutputMatcher::Outcome::kNeedMore);
  r = m.Feed(m.fed_to(), "x\ndone\n", false);
  REQUIRE(r.ok());
  REQUIRE(r->kind == OutputMatcher::Outcome::kMatched);
  CHECK(r->match_from == 6);
}

TEST_CASE("text that cannot be part of a match is dropped from the window") {
  OutputMatcher m(Compile("needle"), 100, 16);
  std::string hay(64, 'x');
  for (int i = 0; i < 100; ++i) {
    auto r = m.Feed(m.fed_to(), hay, false);
    REQUIRE(r.ok());
    REQUIRE(r->kind == OutputMatcher::Outcome::kNeedMore);
  }
  CHECK(m.resume_from() == 100 + 6400);
  // Each byte was scanned about once, not once per chunk.
  CHECK(m.scanned() < 2 * 6400);
  auto r = m.Feed(m.fed_to(), "needle", false);
  REQUIRE(r.ok());
  REQUIRE(r->kind == OutputMatcher::Outcome::kMatched);
  CHECK(r->match_from == 6500);
}

TEST_CASE("a begun match longer than the window limit is given up, named") {
  OutputMatcher m(Compile("BEGIN[^!]*END"), 0, 32);
  auto out = FeedAll(m, {"BEGIN", std::string(20, 'y'), std::string(20, 'y'), "END"}, false);
  CHECK(out.kind == OutputMatcher::Outcome::kWindowFull);
  CHECK(m.resume_from() == 0);
}

TEST_CASE("a UTF-8 character split across chunks still matches") {
  OutputMatcher m(Compile("caf\xc3\xa9"), 0, 1 << 20);
  auto out = FeedAll(m, {"caf\xc3", "\xa9!"}, false);
  REQUIRE(out.kind == OutputMatcher::Outcome::kMatched);
  CHECK(out.text == "caf\xc3\xa9");
}

TEST_CASE("a lookbehind sees the bytes of the chunk before") {
  OutputMatcher m(Compile("(?<=id=)\\d+;"), 0, 1 << 20);
  auto out = FeedAll(m, {"xx id=", "42;"}, false);
  REQUIRE(out.kind == OutputMatcher::Outcome::kMatched);
  CHECK(out.text == "42;");
  CHECK(out.match_from == 6);
}

TEST_CASE("a gap restarts the window at the first byte after it") {
  OutputMatcher m(Compile("ab"), 0, 1 << 20);
  auto r = m.Feed(0, "a", false);
  REQUIRE(r.ok());
  r = m.Feed(10, "b ab", false);
  REQUIRE(r.ok());
  REQUIRE(r->kind == OutputMatcher::Outcome::kMatched);
  CHECK(r->match_from == 12);
}

TEST_CASE("an empty match does not count") {
  OutputMatcher m(Compile("x*"), 0, 1 << 20);
  auto out = FeedAll(m, {"abc", "dxx."}, false);
  REQUIRE(out.kind == OutputMatcher::Outcome::kMatched);
  CHECK(out.text == "xx");
  CHECK(out.match_from == 4);
}
