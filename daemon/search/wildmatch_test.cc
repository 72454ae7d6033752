#include "search/wildmatch.h"

#include <catch2/catch.hpp>

using agentd::ExpandBraces;
using agentd::WildMatch;

TEST_CASE("a star matches any run of characters within one component") {
  CHECK(WildMatch("*.c", "main.c"));
  CHECK(WildMatch("*.c", ".c"));
  CHECK_FALSE(WildMatch("*.c", "src/main.c"));
  CHECK(WildMatch("src/*.c", "src/main.c"));
  CHECK_FALSE(WildMatch("src/*.c", "src/a/main.c"));
  CHECK(WildMatch("a*b*c", "axxbyyc"));
  CHECK_FALSE(WildMatch("a*b*c", "axxbyy"));
}

TEST_CASE("a question mark matches one character but not a slash") {
  CHECK(WildMatch("?.c", "a.c"));
  CHECK_FALSE(WildMatch("?.c", "ab.c"));
  CHECK_FALSE(WildMatch("a?b", "a/b"));
}

TEST_CASE("a bracket set matches one character of the set") {
  CHECK(WildMatch("[abc].txt", "b.txt"));
  CHECK_FALSE(WildMatch("[abc].txt", "d.txt"));
  CHECK(WildMatch("[a-c]x", "bx"));
  CHECK(WildMatch("[!a-c]x", "dx"));
  CHECK(WildMatch("[^a-c]x", "dx"));
  CHECK_FALSE(WildMatch("[!a-c]x", "ax"));
  CHECK(WildMatch("[]]", "]"));
  CHECK(WildMatch("[[:digit:]]*", "7up"));
  CHECK_FALSE(WildMatch("[[:digit:]]*", "up"));
  CHECK_FALSE(WildMatch("a[/]b", "a/b"));
  CHECK(WildMatch("a[", "a["));  // unterminated: literal
}

TEST_CASE("a double star as a whole component matches any number of components") {
  CHECK(WildMatch("**/x.c", "x.c"));
  CHECK(WildMatch("**/x.c", "a/b/x.c"));
  CHECK(WildMatch("a/**/b", "a/b"));
  CHECK(WildMatch("a/**/b", "a/x/y/b"));
  CHECK_FALSE(WildMatch("a/**/b", "ab"));
  CHECK(WildMatch("a/**", "a/x/y"));
  CHECK(WildMatch("**", "any/thing"));
  CHECK(WildMatch("src/**/*.h", "src/x/y/z.h"));
  CHECK_FALSE(WildMatch("src/**/*.h", "src/x/y/z.c"));
  // Not a whole component: an ordinary star.
  CHECK(WildMatch("a**b", "axxb"));
  CHECK_FALSE(WildMatch("a**b", "ax/xb"));
}

TEST_CASE("a backslash makes the next character literal") {
  CHECK(WildMatch("\\*", "*"));
  CHECK_FALSE(WildMatch("\\*", "x"));
  CHECK(WildMatch("a\\?", "a?"));
}

TEST_CASE("case folding is asked for") {
  CHECK_FALSE(WildMatch("*.TXT", "a.txt"));
  CHECK(WildMatch("*.TXT", "a.txt", true));
  CHECK(WildMatch("[A-C].x", "b.x", true));
}

TEST_CASE("a pathological pattern is not exponential") {
  std::string text(4000, 'a');
  CHECK_FALSE(WildMatch("*a*a*a*a*a*a*a*a*a*a*b", text));
  CHECK_FALSE(WildMatch("**/a*a*a*a*a*a*b", "x/" + text));
}

TEST_CASE("brace sets expand like the shell") {
  bool too_many = false;
  CHECK(ExpandBraces("a.{c,h}", 100, &too_many) == std::vector<std::string>{"a.c", "a.h"});
  CHECK(ExpandBraces("{a,b}{1,2}", 100, &too_many) ==
        std::vector<std::string>{"a1", "a2", "b1", "b2"});
  CHECK(ExpandBraces("x{a,{b,c}}", 100, &too_many) == std::vector<std::string>{"xa", "xb", "xc"});
  CHECK(ExpandBraces("{a}", 100, &too_many) == std::vector<std::string>{"{a}"});
  CHECK(ExpandBraces("{a,b", 100, &too_many) == std::vector<std::string>{"{a,b"});
  CHECK(ExpandBraces("\\{a,b}", 100, &too_many) == std::vector<std::string>{"\\{a,b}"});
  CHECK_FALSE(too_many);
  CHECK(ExpandBraces("{a,b}{c,d}{e,f}", 7, &too_many).empty());
  CHECK(too_many);
}
