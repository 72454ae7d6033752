#include "agentd/protocol/search.h"

#include <catch2/catch.hpp>

using namespace agentd;

TEST_CASE("a search match round-trips through JSON") {
  SearchMatch m{"/w/a.c", 3, 5, "int x;", true, {1, 2}, {"b"}, {"a1", "a2"}};
  auto line = DecodeSearchLine(json::Parse(json::Serialize(EncodeSearchMatch(m))).value());
  REQUIRE(line.ok());
  const auto& back = std::get<SearchMatch>(*line);
  CHECK(back.path == "/w/a.c");
  CHECK(back.line == 3);
  CHECK(back.column == 5);
  CHECK(back.cut);
  CHECK(back.invalid_utf8 == std::vector<uint64_t>{1, 2});
  CHECK(back.after == std::vector<std::string>{"a1", "a2"});
}

TEST_CASE("a search summary round-trips, its bound null or named") {
  SearchSummary s;
  s.files_scanned = 9;
  s.truncated = true;
  s.bound = "time";
  auto line = DecodeSearchLine(json::Parse(json::Serialize(EncodeSearchSummary(s))).value());
  REQUIRE(line.ok());
  CHECK(std::get<SearchSummary>(*line).bound == std::optional<std::string>("time"));
  s.bound.reset();
  s.truncated = false;
  line = DecodeSearchLine(EncodeSearchSummary(s));
  REQUIRE(line.ok());
  CHECK_FALSE(std::get<SearchSummary>(*line).bound);
}

TEST_CASE("a search line of another type or missing members is refused") {
  CHECK_FALSE(DecodeSearchLine(json::Parse(R"({"type":"other"})").value()).ok());
  CHECK_FALSE(DecodeSearchLine(json::Parse(R"({"type":"match","path":"/x"})").value()).ok());
  CHECK_FALSE(DecodeSearchLine(json::Parse(R"([1])").value()).ok());
}

TEST_CASE("a glob answer round-trips") {
  GlobResponse g;
  FileStat st;
  st.path = "/w/a.c";
  st.type = FileStat::Type::kFile;
  st.size = 4;
  st.mode = 0644;
  g.entries.push_back(st);
  g.truncated = true;
  g.bound = "results";
  auto back = DecodeGlobResponse(json::Parse(json::Serialize(EncodeGlobResponse(g))).value());
  REQUIRE(back.ok());
  REQUIRE(back->entries.size() == 1);
  CHECK(back->entries[0].path == "/w/a.c");
  CHECK(back->bound == std::optional<std::string>("results"));
}
