#include "fs/line_scanner.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>

using namespace agentd;

namespace {

// The contract, written the obvious way: split after each '\n'.
std::string Reference(const std::string& text, uint64_t start, std::optional<uint64_t> end) {
  std::string out;
  uint64_t line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    if (line >= start && (!end || line <= *end)) out += text[i];
    if (text[i] == '\n') ++line;
  }
  return out;
}

// Runs the scanner over `text` cut into blocks of `block` bytes; returns
// both the located span and the streamed slices.
std::pair<std::string, std::string> Scan(const std::string& text, LineRange range, size_t block) {
  LineRangeScanner s(range);
  std::string streamed;
  for (size_t off = 0; off < text.size() && !s.done(); off += block) {
    streamed += s.Feed(std::string_view(text).substr(off, block));
  }
  s.Finish();
  return {text.substr(s.begin(), s.end() - s.begin()), streamed};
}

void CheckAllBlockSizes(const std::string& text, uint64_t start, std::optional<uint64_t> end) {
  std::string want = Reference(text, start, end);
  for (size_t block :
       {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{64}, size_t{4096}, text.size() + 1}) {
    INFO("block " << block << " start " << start << " end " << (end ? *end : 0));
    auto [span, streamed] = Scan(text, LineRange{start, end}, block);
    CHECK(span == want);
    CHECK(streamed == want);
  }
}

}  // namespace

TEST_CASE("line ranges of an empty file are empty", "[lines]") {
  CheckAllBlockSizes("", 1, std::nullopt);
  CheckAllBlockSizes("", 1, 1);
  CheckAllBlockSizes("", 5, 9);
}

TEST_CASE("a last line without a newline is a line", "[lines]") {
  std::string text = "one\ntwo\nthree";
  CheckAllBlockSizes(text, 3, 3);
  CheckAllBlockSizes(text, 2, std::nullopt);
  CheckAllBlockSizes(text, 3, 100);
  CheckAllBlockSizes(text, 4, std::nullopt);  // past EOF: empty
  auto [span, streamed] = Scan(text, {3, 3}, 4096);
  CHECK(span == "three");
}

TEST_CASE("a trailing newline does not start another line", "[lines]") {
  std::string text = "a\nb\n";
  CheckAllBlockSizes(text, 2, 2);
  CheckAllBlockSizes(text, 3, std::nullopt);
  CHECK(Scan(text, {3, std::nullopt}, 4096).first.empty());
  CHECK(Scan(text, {2, 9}, 4096).first == "b\n");
}

TEST_CASE("CRLF lines come back byte-identical", "[lines]") {
  std::string text = "a\r\nb\r\n\r\nc";
  CheckAllBlockSizes(text, 2, 3);
  CHECK(Scan(text, {2, 3}, 4096).first == "b\r\n\r\n");
}

TEST_CASE("empty lines count as lines", "[lines]") {
  std::string text = "\n\n\nx\n";
  CheckAllBlockSizes(text, 2, 4);
  CHECK(Scan(text, {4, 4}, 4096).first == "x\n");
}

TEST_CASE("one long line across many blocks", "[lines]") {
  std::string text(100000, 'x');
  text += "\nshort\n";
  CheckAllBlockSizes(text, 1, 1);
  CHECK(Scan(text, {2, 2}, 4096).first == "short\n");
  CHECK(Scan(text, {1, 1}, 4096).first.size() == 100001);
}

TEST_CASE("random texts match the reference for every range and block size", "[lines]") {
  std::mt19937 rng(42);
  for (int round = 0; round < 40; ++round) {
    std::string text;
    size_t len = rng() % 3000;
    for (size_t i = 0; i < len; ++i) text += "ab\n\r"[rng() % 4];
    uint64_t start = 1 + rng() % 800;
    std::optional<uint64_t> end;
    if (rng() % 3) end = start + rng() % 400;
    CheckAllBlockSizes(text, start, end);
  }
}

TEST_CASE("newline counting agrees with a byte loop at every alignment", "[lines]") {
  std::mt19937 rng(7);
  std::string text(70000, 'a');
  for (char& c : text) {
    if (rng() % 5 == 0) c = '\n';
  }
  for (size_t off : {size_t{0}, size_t{1}, size_t{15}, size_t{17}}) {
    for (size_t n : {size_t{0}, size_t{5}, size_t{16}, size_t{31}, size_t{33}, size_t{4079},
                     size_t{8191}, size_t{69000}}) {
      size_t naive = 0;
      for (size_t i = off; i < off + n; ++i) naive += text[i] == '\n';
      CHECK(CountNewlines(text.data() + off, n) == naive);
      // Each width on its own (one the CPU lacks falls back to a narrower).
      for (NewlineCount how : {NewlineCount::kBytes, NewlineCount::kSse2, NewlineCount::kAvx2}) {
        INFO("width " << static_cast<int>(how) << " off " << off << " n " << n);
        CHECK(CountNewlinesWith(text.data() + off, n, how) == naive);
      }
    }
  }
  // Nothing but newlines: every byte-wise counter reaches its limit.
  std::string all(20000, '\n');
  for (NewlineCount how : {NewlineCount::kBytes, NewlineCount::kSse2, NewlineCount::kAvx2}) {
    CHECK(CountNewlinesWith(all.data() + 3, all.size() - 3, how) == all.size() - 3);
  }
  size_t counted = 0;
  CHECK(FindNthNewline("a\nb\nc", 5, 2, &counted) == 3u);
  CHECK_FALSE(FindNthNewline("a\nb\nc", 5, 3, &counted).has_value());
  CHECK(counted == 2);
}
