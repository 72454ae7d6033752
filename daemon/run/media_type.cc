#include "run/media_type.h"

#include <array>
#include <cstring>

namespace agentd {
namespace {

struct Signature {
  size_t offset;
  std::string_view bytes;
  std::string_view type;
};

using namespace std::string_view_literals;

// Fixed-offset signatures, the most specific first.
constexpr std::array kSignatures = {
    Signature{0, "\x89PNG\r\n\x1a\n"sv, "image/png"sv},
    Signature{0, "\xff\xd8\xff"sv, "image/jpeg"sv},
    Signature{0, "GIF87a"sv, "image/gif"sv},
    Signature{0, "GIF89a"sv, "image/gif"sv},
    Signature{0, "\x00\x00\x01\x00"sv, "image/x-icon"sv},
    Signature{0, "II*\x00"sv, "image/tiff"sv},
    Signature{0, "MM\x00*"sv, "image/tiff"sv},
    Signature{0, "%PDF-"sv, "application/pdf"sv},
    Signature{0, "%!PS-Adobe-"sv, "application/postscript"sv},
    Signature{0, "PK\x03\x04"sv, "application/zip"sv},
    Signature{0, "PK\x05\x06"sv, "application/zip"sv},
    Signature{0, "\x1f\x8b\x08"sv, "application/gzip"sv},
    Signature{0, "BZh"sv, "application/x-bzip2"sv},
    Signature{0, "\xfd\x37zXZ\x00"sv, "application/x-xz"sv},
    Signature{0, "\x28\xb5\x2f\xfd"sv, "application/zstd"sv},
    Signature{0, "7z\xbc\xaf\x27\x1c"sv, "application/x-7z-compressed"sv},
    Signature{257, "ustar"sv, "application/x-tar"sv},
    Signature{0, "\x7f\x45LF"sv, "application/x-elf"sv},
    Signature{0, "\x00\x61sm"sv, "application/wasm"sv},
    Signature{0, "SQLite format 3\x00"sv, "application/vnd.sqlite3"sv},
    Signature{0, "PAR1"sv, "application/vnd.apache.parquet"sv},
    Signature{0, "ARROW1"sv, "application/vnd.apache.arrow.file"sv},
    Signature{0, "\x93NUMPY"sv, "application/x-npy"sv},
    Signature{0, "\x89HDF\r\n\x1a\n"sv, "application/x-hdf5"sv},
    Signature{0, "OggS\x00"sv, "audio/ogg"sv},
    Signature{0, "fLaC"sv, "audio/flac"sv},
    Signature{0, "\x1a\x45\xdf\xa3"sv, "video/webm"sv},
    Signature{0, "wOFF"sv, "font/woff"sv},
    Signature{0, "wOF2"sv, "font/woff2"sv},
};

bool At(std::string_view head, size_t offset, std::string_view bytes) {
  return head.size() >= offset + bytes.size() && head.substr(offset, bytes.size()) == bytes;
}

// Signatures short enough to start a text file too ("BMW", "ID3 tags")
// are checked with the header bytes that follow them; RIFF containers name
// their form at offset 8, ISO media its brand at 4.
std::string_view Container(std::string_view head) {
  if (At(head, 0, "BM") && At(head, 6, std::string_view("\0\0\0\0", 4))) return "image/bmp";
  if (At(head, 0, "ID3") && head.size() > 4 && head[3] >= 2 && head[3] <= 4 && head[4] == 0) {
    return "audio/mpeg";
  }
  if (At(head, 0, "RIFF")) {
    if (At(head, 8, "WEBP")) return "image/webp";
    if (At(head, 8, "WAVE")) return "audio/wav";
    if (At(head, 8, "AVI ")) return "video/x-msvideo";
  }
  if (At(head, 4, "ftyp")) {
    if (At(head, 8, "avif")) return "image/avif";
    if (At(head, 8, "heic")) return "image/heic";
    if (At(head, 8, "qt  ")) return "video/quicktime";
    if (At(head, 8, "M4A ")) return "audio/mp4";
    return "video/mp4";
  }
  return {};
}

// Valid UTF-8 with no control byte a text file does not hold; a sequence
// cut by the end of the head (not of the file) is allowed.
bool LooksLikeText(std::string_view head, bool whole) {
  size_t i = 0;
  while (i < head.size()) {
    unsigned char c = static_cast<unsigned char>(head[i]);
    if (c < 0x80) {
      if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != 0x1b) return false;
      if (c == 0x7f) return false;
      ++i;
      continue;
    }
    size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    if (len == 0 || c > 0xf4) return false;
    if (i + len > head.size()) return !whole;  // cut by the sniff window
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(head[i + k]) & 0xc0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

std::string_view SkipSpace(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  if (s.substr(i, 3) == "\xef\xbb\xbf") return SkipSpace(s.substr(i + 3));  // a BOM
  return s.substr(i);
}

bool StartsNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    char a = s[i];
    if (a >= 'A' && a <= 'Z') a = static_cast<char>(a - 'A' + 'a');
    if (a != prefix[i]) return false;
  }
  return true;
}

// Text formats told apart by how they start.
std::string_view TextKind(std::string_view head) {
  std::string_view s = SkipSpace(head);
  if (StartsNoCase(s, "<!doctype html") || StartsNoCase(s, "<html")) return "text/html";
  if (StartsNoCase(s, "<svg") ||
      (StartsNoCase(s, "<?xml") && s.find("<svg") != std::string_view::npos)) {
    return "image/svg+xml";
  }
  if (StartsNoCase(s, "<?xml")) return "application/xml";
  if (!s.empty() && (s[0] == '{' || s[0] == '[')) {
    // The second significant byte of a JSON document is limited.
    std::string_view rest = SkipSpace(s.substr(1));
    if (rest.empty() || std::strchr("\"{[]}-0123456789tfn", rest[0]) != nullptr) {
      return "application/json";
    }
  }
  return "text/plain; charset=utf-8";
}

}  // namespace

std::string_view SniffMediaType(std::string_view head, size_t size) {
  if (head.size() > kSniffBytes) head = head.substr(0, kSniffBytes);
  for (const Signature& sig : kSignatures) {
    if (At(head, sig.offset, sig.bytes)) return sig.type;
  }
  if (std::string_view c = Container(head); !c.empty()) return c;
  if (size == 0) return "text/plain; charset=utf-8";  // an empty file is empty text
  if (LooksLikeText(head, head.size() == size)) return TextKind(head);
  return "application/octet-stream";
}

}  // namespace agentd
