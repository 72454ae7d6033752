#include "search/file_scanner.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "agentd/protocol/json.h"
#include "testing/temp_dir.h"

using namespace agentd;

namespace {

struct Scanned {
  std::vector<json::Value> lines;
  FileScanResult result;
};

Scanned ScanText(const std::string& content, const char* pattern, FileScanOptions o = {0, 1024},
                 LineMatcherOptions mo = {}) {
  testing::TempDir dir;
  dir.Write("f", content);
  int fd = ::open((dir / "f").c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  auto m = LineMatcher::Compile(pattern, mo);
  REQUIRE(m.ok());
  FileScanner scanner(*m, o);
  Scanned out;
  auto r = scanner.Scan(fd, "/x/f", [&](std::string_view line) {
    REQUIRE(line.back() == '\n');
    auto v = json::Parse(line.substr(0, line.size() - 1));
    REQUIRE(v.ok());
    out.lines.push_back(*v);
    return true;
  });
  ::close(fd);
  REQUIRE(r.ok());
  out.result = *r;
  return out;
}

int64_t Int(const json::Value& v, const char* k) { return v.Find(k)->as_int(); }
std::string Str(const json::Value& v, const char* k) { return v.Find(k)->as_string(); }

}  // namespace

TEST_CASE("matches name their 1-based line and column") {
  auto s = ScanText("alpha\nbeta\ngamma beta\n", "beta");
  REQUIRE(s.lines.size() == 2);
  CHECK(Int(s.lines[0], "line") == 2);
  CHECK(Int(s.lines[0], "column") == 1);
  CHECK(Int(s.lines[1], "line") == 3);
  CHECK(Int(s.lines[1], "column") == 7);
  CHECK(Str(s.lines[1], "text") == "gamma beta");
  CHECK(Str(s.lines[1], "path") == "/x/f");
  CHECK(s.lines[1].Find("cut")->as_bool() == false);
}

TEST_CASE("line numbers stay right across read blocks") {
  std::string content;
  for (int i = 1; i <= 200000; ++i)
    content += (i == 150001 ? "needle" : "hay " + std::to_string(i)) + "\n";
  REQUIRE(content.size() > 3 * kSearchReadBytes);
  auto s = ScanText(content, "needle");
  REQUIRE(s.lines.size() == 1);
  CHECK(Int(s.lines[0], "line") == 150001);
}

TEST_CASE("a long line is cut on a UTF-8 boundary and says so") {
  auto s = ScanText(
      "ab\xc3\xa9"
      "cd\n",
      "cd", {0, 3});
  REQUIRE(s.lines.size() == 1);
  CHECK(Str(s.lines[0], "text") == "ab");
  CHECK(s.lines[0].Find("cut")->as_bool());
}

TEST_CASE("invalid UTF-8 is named by byte offset") {
  auto s = ScanText("ok \xff here\n", "here");
  REQUIRE(s.lines.size() == 1);
  CHECK(Str(s.lines[0], "text") == "ok \xEF\xBF\xBD here");  // U+FFFD for the byte
  REQUIRE(s.lines[0].Find("invalid_utf8"));
  CHECK(s.lines[0].Find("invalid_utf8")->as_array().size() == 1);
  CHECK(s.lines[0].Find("invalid_utf8")->as_array()[0].as_int() == 3);
}

TEST_CASE("context lines come before and after, also across read blocks") {
  auto s = ScanText("1\n2\nhit\n4\n5\n6\n", "hit", {2, 1024});
  REQUIRE(s.lines.size() == 1);
  auto& b = s.lines[0].Find("before")->as_array();
  auto& a = s.lines[0].Find("after")->as_array();
  REQUIRE(b.size() == 2);
  CHECK(b[0].as_string() == "1");
  CHECK(b[1].as_string() == "2");
  REQUIRE(a.size() == 2);
  CHECK(a[0].as_string() == "4");
  CHECK(a[1].as_string() == "5");

  std::string big;
  while (big.size() < kSearchReadBytes - 3) big += "filler line\n";
  big.resize(kSearchReadBytes - 3);
  big += "\nbefore\nhit\nafter1\nafter2\n";
  auto t = ScanText(big, "^hit$", {2, 1024});
  REQUIRE(t.lines.size() == 1);
  CHECK(t.lines[0].Find("before")->as_array()[1].as_string() == "before");
  REQUIRE(t.lines[0].Find("after")->as_array().size() == 2);
  CHECK(t.lines[0].Find("after")->as_array()[1].as_string() == "after2");
}

TEST_CASE("a match ending a read block keeps its line number when context reaches before it") {
  // The lines kept for `before` start before the match's own line.
  std::string big;
  while (big.size() < kSearchReadBytes - 11) big += "filler\n";
  big.resize(kSearchReadBytes - 11);
  big.back() = '\n';
  big += "before\nhit\n";  // the last line of the first read
  REQUIRE(big.size() == kSearchReadBytes);
  const int64_t first = static_cast<int64_t>(std::count(big.begin(), big.end(), '\n'));
  big += "after\nhit\n";
  auto s = ScanText(big, "^hit$", {2, 1024});
  REQUIRE(s.lines.size() == 2);
  CHECK(Int(s.lines[0], "line") == first);
  CHECK(Int(s.lines[1], "line") == first + 2);
}

TEST_CASE("context at the start and the end of a file is shorter") {
  auto s = ScanText("hit\nlast", "hit|last", {3, 1024});
  REQUIRE(s.lines.size() == 2);
  CHECK(s.lines[0].Find("before")->as_array().empty());
  CHECK(s.lines[0].Find("after")->as_array().size() == 1);
  CHECK(s.lines[1].Find("before")->as_array().size() == 1);
  CHECK(s.lines[1].Find("after")->as_array().empty());
}

TEST_CASE("a file with a NUL byte is binary and not searched") {
  auto s = ScanText(std::string("needle\0x\n", 9), "needle");
  CHECK(s.lines.empty());
  CHECK(s.result.binary);
}

TEST_CASE("CRLF line ends are not part of the text") {
  auto s = ScanText("a hit\r\nb\r\n", "hit");
  REQUIRE(s.lines.size() == 1);
  CHECK(Str(s.lines[0], "text") == "a hit");
}

TEST_CASE("a known size ends the scan without a read that confirms the end") {
  // A pipe whose writer stays open: a read after the data answers EAGAIN
  // (an error), so the scan ends well only if it makes no such read.
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0);
  const std::string text = "one\na hit\n";
  REQUIRE(::write(p[1], text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  auto m = LineMatcher::Compile("hit", {});
  REQUIRE(m.ok());
  FileScanner scanner(*m, {0, 1024});
  int matches = 0;
  auto r = scanner.Scan(
      p[0], "/p",
      [&](std::string_view) {
        ++matches;
        return true;
      },
      static_cast<off_t>(text.size()));
  ::close(p[0]);
  ::close(p[1]);
  REQUIRE(r.ok());
  CHECK(matches == 1);
}

TEST_CASE("matches found through the required literal keep their lines, columns and context") {
  // `conf_` is the pattern's required literal: lines holding it that do
  // not match, a match split by the first read block's end, and context
  // around each match. The expected lines are known by construction.
  std::string text;
  std::vector<int64_t> want;  // line numbers of the matches
  int64_t line = 0;
  auto add = [&](const std::string& l, bool match) {
    text += l + "\n";
    ++line;
    if (match) want.push_back(line);
  };
  add("conf_table_12 conf_ conf_x_abc", false);  // the literal, thrice, no match
  add("prefix conf_table_123 suffix", true);
  while (text.size() + 40 < kSearchReadBytes) add("filler conf_ line without a match", false);
  // The first read block ends inside this line's match.
  text += std::string(kSearchReadBytes - 10 - text.size(), 'y');
  add(" conf_entry_007 end", true);
  add("conf_ABC_123", false);  // upper case: no match unless case is ignored
  add("after the boundary", false);
  add("last conf_size_999", true);
  for (bool ignore_case : {false, true}) {
    for (const char* pattern : {"conf_[a-z]+_\\d{3}\\b", "zzz_never|conf_[a-z]+_\\d{3}\\b"}) {
      INFO("pattern " << pattern << " ignore_case " << ignore_case);
      LineMatcherOptions mo;
      mo.ignore_case = ignore_case;
      auto s = ScanText(text, pattern, {1, 1024}, mo);
      std::vector<int64_t> got;
      for (auto& v : s.lines) got.push_back(Int(v, "line"));
      std::vector<int64_t> expect = want;
      if (ignore_case) expect.insert(expect.end() - 1, want[1] + 1);  // conf_ABC_123
      REQUIRE(got == expect);
      CHECK(Int(s.lines[0], "column") == 8);
      CHECK(s.lines[0].Find("before")->as_array()[0].as_string() ==
            "conf_table_12 conf_ conf_x_abc");
      CHECK(s.lines[0].Find("after")->as_array()[0].as_string() ==
            "filler conf_ line without a match");
      // The match across the block boundary: its text, column and context.
      const json::Value& cross = s.lines[1];
      CHECK(Str(cross, "text").substr(Str(cross, "text").size() - 19) == " conf_entry_007 end");
      CHECK(Int(cross, "column") == static_cast<int64_t>(Str(cross, "text").size() - 17));
      CHECK(cross.Find("after")->as_array()[0].as_string() == "conf_ABC_123");
      CHECK(s.result.matches == expect.size());
    }
  }
}
