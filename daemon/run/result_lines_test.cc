#include "run/result_lines.h"

#include <catch2/catch.hpp>

#include "agentd/protocol/run.h"

using namespace agentd;

namespace {

// Feeds `stream` in pieces of `step` bytes (1: every byte its own write).
ResultLines Fed(const std::string& stream, size_t step) {
  ResultLines lines("__R__", 0);
  for (size_t i = 0; i < stream.size(); i += step) lines.Feed(stream.substr(i, step));
  lines.Finish();
  return lines;
}

}  // namespace

TEST_CASE("Result lines: a marker line split across writes is found and removed") {
  std::string stream = "log 1\n__R__ {\"total\": 42, \"rows\": [1, 2]}\nlog 2\n__R";
  for (size_t step : {1, 2, 3, 7, 64}) {
    ResultLines lines = Fed(stream, step);
    bool cut = false;
    CHECK(lines.Text(&cut) == "log 1\nlog 2\n__R");
    CHECK(!cut);
    REQUIRE(lines.result().has_value());
    CHECK(json::Serialize(*lines.result()) == "{\"total\":42,\"rows\":[1,2]}");
    CHECK(!lines.error());
  }
}

TEST_CASE("Result lines: only at a line start; the last one wins; bad JSON is an error") {
  ResultLines lines = Fed("x __R__ 1\n__R__ 1\n__R__ [oops\r\n", 3);
  bool cut = false;
  CHECK(lines.Text(&cut) == "x __R__ 1\n");
  CHECK(lines.found());
  CHECK(!lines.result());
  REQUIRE(lines.error());
  CHECK(lines.error()->starts_with("the result line is not JSON"));
  ResultLines last = Fed("__R__ 1\n__R__ \"two\"", 5);
  CHECK(json::Serialize(*last.result()) == "\"two\"");
  ResultLines none = Fed("plain\n", 1);
  CHECK(!none.found());
}

TEST_CASE("Result lines: a result line past the bound is an error naming it") {
  ResultLines lines("__R__", 0);
  lines.Feed("__R__ \"");
  std::string big(kRunResultLineBytes, 'a');
  lines.Feed(big);
  lines.Feed("\"\nafter\n");
  lines.Finish();
  bool cut = false;
  CHECK(lines.Text(&cut) == "after\n");
  REQUIRE(lines.error());
  CHECK(*lines.error() == "the result line is " + std::to_string(kRunResultLineBytes + 8) +
                              " bytes, more than " + std::to_string(kRunResultLineBytes));
}

TEST_CASE("Result lines: the remaining output keeps the answer's head and tail bounds") {
  ResultLines lines("__R__", 0);
  lines.Feed(std::string(20000, 'H'));
  lines.Feed("\n__R__ 7\n");
  lines.Feed(std::string(100000, 'T'));
  lines.Finish();
  bool cut = false;
  std::string text = lines.Text(&cut);
  CHECK(cut);
  CHECK(text.starts_with(std::string(kRunHeadBytes, 'H') + "\n[... "));
  CHECK(text.ends_with(std::string(kRunOutputBytes - kRunHeadBytes, 'T')));
  CHECK(text.find(std::to_string(120001 - kRunOutputBytes) + " bytes omitted") !=
        std::string::npos);
  CHECK(json::Serialize(*lines.result()) == "7");
}
