#include "run/media_type.h"

#include <catch2/catch.hpp>
#include <string>

using namespace agentd;
using namespace std::string_literals;

namespace {

std::string_view Sniff(const std::string& bytes) {
  return SniffMediaType(std::string_view(bytes).substr(0, kSniffBytes), bytes.size());
}

}  // namespace

TEST_CASE("media type: binary formats are named by their signature, not their name", "[run]") {
  CHECK(Sniff("\x89PNG\r\n\x1a\n\0\0\0\rIHDR"s) == "image/png");
  CHECK(Sniff("\xff\xd8\xff\xe0\0\x10JFIF"s) == "image/jpeg");
  CHECK(Sniff("GIF89a\x01\0"s) == "image/gif");
  CHECK(Sniff("%PDF-1.7\n%\xe2\xe3"s) == "application/pdf");
  CHECK(Sniff("PK\x03\x04\x14\0\0\0"s) == "application/zip");
  CHECK(Sniff("\x1f\x8b\x08\0\0\0\0\0"s) == "application/gzip");
  CHECK(Sniff("RIFF\x24\0\0\0WEBPVP8 "s) == "image/webp");
  CHECK(Sniff("RIFF\x24\0\0\0WAVEfmt "s) == "audio/wav");
  CHECK(Sniff("\0\0\0\x18"
              "ftypmp42"s) == "video/mp4");
  CHECK(Sniff("SQLite format 3\0"s + std::string(100, '\0')) == "application/vnd.sqlite3");
  CHECK(Sniff("PAR1\x15\x04"s) == "application/vnd.apache.parquet");
  CHECK(Sniff("\x93NUMPY\x01\0"s) == "application/x-npy");
  std::string tar(512, '\0');
  tar.replace(0, 5, "a.txt");
  tar.replace(257, 6, "ustar\0"s);
  CHECK(Sniff(tar) == "application/x-tar");
}

TEST_CASE("media type: short signatures need their header, so text that starts alike stays text",
          "[run]") {
  CHECK(Sniff("BM\x36\0\0\0\0\0\0\0\x36\0\0\0"s) == "image/bmp");
  CHECK(Sniff("BMW sold more cars\n") == "text/plain; charset=utf-8");
  CHECK(Sniff("ID3\x04\0\0\0\0\0\x10"s) == "audio/mpeg");
  CHECK(Sniff("ID3 tags are metadata\n") == "text/plain; charset=utf-8");
}

TEST_CASE("media type: text is told apart by how it starts", "[run]") {
  CHECK(Sniff("") == "text/plain; charset=utf-8");
  CHECK(Sniff("total,amount\n1,2\n") == "text/plain; charset=utf-8");
  CHECK(Sniff("  {\"rows\": [1, 2]}\n") == "application/json");
  CHECK(Sniff("[\n  1,\n  2\n]") == "application/json");
  CHECK(Sniff("[section]\nkey = value\n") == "text/plain; charset=utf-8");  // INI, not JSON
  CHECK(Sniff("<!DOCTYPE html><html><body>hi</body></html>") == "text/html");
  CHECK(Sniff("<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>") ==
        "image/svg+xml");
  CHECK(Sniff("<svg width=\"10\"></svg>") == "image/svg+xml");
  CHECK(Sniff("<?xml version=\"1.0\"?><rows/>") == "application/xml");
  CHECK(Sniff("\xef\xbb\xbf{\"bom\": true}"s) == "application/json");
  CHECK(Sniff("caf\xc3\xa9 cr\xc3\xa8me\n"s) == "text/plain; charset=utf-8");
}

TEST_CASE("media type: binary bytes and broken UTF-8 are octet-stream", "[run]") {
  CHECK(Sniff("\x01\x02\x03\x04"s) == "application/octet-stream");
  CHECK(Sniff("text with a NUL\0 inside"s) == "application/octet-stream");
  CHECK(Sniff("caf\xc3 broken"s) == "application/octet-stream");
  CHECK(Sniff("\xc0\xaf overlong"s) == "application/octet-stream");
}

TEST_CASE("media type: a UTF-8 sequence cut by the sniff window is still text", "[run]") {
  std::string text(kSniffBytes - 1, 'a');
  text += "\xc3\xa9 and more after the window";
  CHECK(Sniff(text) == "text/plain; charset=utf-8");
  // The same cut at the file's real end is broken UTF-8.
  std::string ends_cut(10, 'a');
  ends_cut += '\xc3';
  CHECK(Sniff(ends_cut) == "application/octet-stream");
}
