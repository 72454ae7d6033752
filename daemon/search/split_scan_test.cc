#include "search/split_scan.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <random>

#include "agentd/trees/unique_fd.h"
#include "search/scan_events.h"
#include "search/search_tally.h"
#include "testing/temp_dir.h"

using namespace agentd;

namespace {

// `lines` lines of 9 bytes ("line0001\n"...), with `hits` replaced by a
// line holding "needle" (padded to the same length).
std::string NumberedLines(int lines, std::initializer_list<int> hits = {}) {
  std::string s;
  char buf[16];
  for (int i = 1; i <= lines; ++i) {
    bool hit = std::find(hits.begin(), hits.end(), i) != hits.end();
    std::snprintf(buf, sizeof(buf), hit ? "needle%02d\n" : "line%04d\n", i % 100);
    s += buf;
  }
  return s;
}

struct Scanned {
  std::string ndjson;  // every match line, in order
  FileScanResult result;
};

// One thread over the whole file (parts == 1) or SplitScan in `parts`.
Scanned ScanFile(const std::string& content, const char* pattern, size_t parts,
                 size_t context = 0) {
  testing::TempDir dir;
  dir.Write("f", content);
  UniqueFd fd(::open((dir / "f").c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd);
  auto m = LineMatcher::Compile(pattern, {});
  REQUIRE(m.ok());
  FileScanner scanner(*m, {context, 1024});
  Scanned out;
  auto emit = [&](std::string_view line) {
    out.ndjson.append(line);
    return true;
  };
  off_t size = static_cast<off_t>(content.size());
  auto r = parts == 1 ? scanner.Scan(fd.get(), "/x/f", emit, size)
                      : SplitScan(scanner, fd.get(), "/x/f", emit, size, parts);
  REQUIRE(r.ok());
  out.result = *r;
  return out;
}

std::vector<off_t> Points(const std::string& content, size_t parts) {
  testing::TempDir dir;
  dir.Write("f", content);
  UniqueFd fd(::open((dir / "f").c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd);
  auto p = SplitPoints(fd.get(), static_cast<off_t>(content.size()), parts, "/x/f");
  REQUIRE(p.ok());
  return *p;
}

}  // namespace

TEST_CASE("a file is cut at the line start at or after each even share") {
  std::string text = NumberedLines(100);                 // 900 bytes
  CHECK(Points(text, 2) == std::vector<off_t>{0, 450});  // 450 starts line 51
  CHECK(Points(text, 3) == std::vector<off_t>{0, 306, 603});
  // A cut inside a line longer than the probe is dropped; so is one
  // with no line start after it.
  std::string long_line = "a\n" + std::string(2 * kSplitProbeBytes, 'x') + "\nb\n";
  CHECK(Points(long_line, 2) == std::vector<off_t>{0});
  CHECK(Points("a\n" + std::string(100, 'x'), 2) == std::vector<off_t>{0});
}

TEST_CASE("a shifted match line has only its line number raised") {
  std::string m = R"({"type":"match","path":"a,\"line\":9","line":12,"column":3,"text":"x"})"
                  "\n";
  CHECK(ShiftMatchLine(m, 1000) ==
        R"({"type":"match","path":"a,\"line\":9","line":1012,"column":3,"text":"x"})"
        "\n");
}

TEST_CASE("a match on the first line of a later part names its line in the file") {
  std::string text = NumberedLines(100, {51, 99});
  Scanned whole = ScanFile(text, "needle", 1);
  Scanned split = ScanFile(text, "needle", 2);
  CHECK(split.ndjson.find("\"line\":51,") != std::string::npos);
  CHECK(split.ndjson.find("\"line\":99,") != std::string::npos);
  CHECK(split.ndjson == whole.ndjson);
  CHECK(split.result.matches == 2);
  CHECK(split.result.lines == 100);
}

TEST_CASE("a match on the line across an even share is found once") {
  // Line 50 is long enough to hold byte 450, where the cut would fall.
  std::string text = NumberedLines(49) + std::string(40, 'x') + "needle\n" + NumberedLines(45);
  REQUIRE(Points(text, 2)[1] == 49 * 9 + 47);
  Scanned split = ScanFile(text, "needle", 2);
  CHECK(split.result.matches == 1);
  CHECK(split.ndjson.find("\"line\":50,") != std::string::npos);
  CHECK(split.ndjson == ScanFile(text, "needle", 1).ndjson);
}

TEST_CASE("context lines cross the cut both ways") {
  std::string text = NumberedLines(100, {50, 51});
  Scanned split = ScanFile(text, "needle", 2, 2);
  CHECK(split.ndjson.find(R"("line":50,)") != std::string::npos);
  // Line 50 (first part) is followed by 51 and 52; line 51 (second part)
  // is preceded by 49 and 50.
  CHECK(split.ndjson.find(R"("after":["needle51","line0052"])") != std::string::npos);
  CHECK(split.ndjson.find(R"("before":["line0049","needle50"])") != std::string::npos);
  CHECK(split.ndjson == ScanFile(text, "needle", 1, 2).ndjson);
}

TEST_CASE("a results bound hit in the first part ends the file at that match") {
  testing::TempDir dir;
  dir.Write("f", NumberedLines(100, {10, 20, 30, 60, 70}));
  UniqueFd fd(::open((dir / "f").c_str(), O_RDONLY | O_CLOEXEC));
  auto m = LineMatcher::Compile("needle", {});
  REQUIRE(m.ok());
  FileScanOptions o{0, 1024};
  o.split_parts = 2;
  o.split_min_bytes = 0;
  FileScanner scanner(*m, o);
  std::string out;
  auto now = SearchTally::Clock::now();
  SearchTally tally(2, 1 << 20, now, now + std::chrono::hours(1), [&](std::string b) {
    out += b;
    return true;
  });
  CHECK_FALSE(ScanOpenedFile(scanner, fd, "/x/f", tally));
  SearchSummary sum = tally.Finish();
  CHECK(sum.matches == 2);
  CHECK(sum.bound == "results");
  CHECK(out.find("\"line\":20,") != std::string::npos);
  CHECK(out.find("\"line\":30,") == std::string::npos);
}

TEST_CASE("a split scan answers as one thread does, whatever the parts and context") {
  std::mt19937 rng(27);
  for (int round = 0; round < 12; ++round) {
    std::string text;
    size_t want = 1000 + rng() % (700 * 1024);  // some cross read blocks
    while (text.size() < want) {
      std::string line(rng() % 40, 'a' + static_cast<char>(rng() % 3));
      if (rng() % 7 == 0) line += "needle";
      text += line + ((rng() % 50 == 0) ? "\r\n" : "\n");
    }
    if (rng() % 2) text += "needle without a newline";
    size_t parts = 2 + rng() % 3;
    size_t context = rng() % 4;
    INFO("round " << round << ", " << text.size() << " bytes, " << parts << " parts, context "
                  << context);
    Scanned whole = ScanFile(text, "needle", 1, context);
    Scanned split = ScanFile(text, "needle", parts, context);
    CHECK(split.ndjson == whole.ndjson);
    CHECK(split.result.lines == whole.result.lines);
  }
}

TEST_CASE("a part with more matches than it may hold waits and loses none") {
  std::string text;
  while (text.size() < kSplitHeldBytes / 4) text += "needle\n";  // ~85 bytes out per 7 in
  Scanned split = ScanFile(text, "needle", 2);
  REQUIRE(split.ndjson.size() > 2 * kSplitHeldBytes);
  CHECK(split.ndjson == ScanFile(text, "needle", 1).ndjson);
}

TEST_CASE("a binary file stays binary when split") {
  std::string text = NumberedLines(100, {60});
  text[3] = '\0';
  Scanned split = ScanFile(text, "needle", 2);
  CHECK(split.result.binary);
  CHECK(split.ndjson.empty());
}
