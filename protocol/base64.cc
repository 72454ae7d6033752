#include "agentd/protocol/base64.h"

#include <array>
#include <cstdint>
#include <cstring>

namespace agentd {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> MakeDecodeTable() {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
  return t;
}
constexpr std::array<int8_t, 256> kDecode = MakeDecodeTable();

// Every 12-bit group as its two output characters: an encoder step is two
// table loads per 3 input bytes (output streams through SSE at full speed).
struct CharPair {
  char c[2];
};
constexpr std::array<CharPair, 4096> MakePairTable() {
  std::array<CharPair, 4096> t{};
  for (int i = 0; i < 4096; ++i) t[i] = CharPair{{kAlphabet[i >> 6], kAlphabet[i & 63]}};
  return t;
}
constexpr std::array<CharPair, 4096> kPairs = MakePairTable();

}  // namespace

void AppendBase64(std::string& out, std::string_view in) {
  size_t start = out.size();
  out.resize(start + (in.size() + 2) / 3 * 4);
  char* p = out.data() + start;
  const auto* s = reinterpret_cast<const unsigned char*>(in.data());
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = (uint32_t{s[i]} << 16) | (uint32_t{s[i + 1]} << 8) | s[i + 2];
    std::memcpy(p, kPairs[v >> 12].c, 2);
    std::memcpy(p + 2, kPairs[v & 0xFFF].c, 2);
    p += 4;
  }
  if (size_t rest = in.size() - i; rest > 0) {
    uint32_t v = uint32_t{s[i]} << 16;
    if (rest == 2) v |= uint32_t{s[i + 1]} << 8;
    *p++ = kAlphabet[v >> 18];
    *p++ = kAlphabet[(v >> 12) & 63];
    *p++ = rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    *p++ = '=';
  }
}

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  AppendBase64(out, bytes);
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = text[i + k];
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return std::nullopt;  // data after padding
      v[k] = kDecode[static_cast<unsigned char>(c)];
      if (v[k] < 0) return std::nullopt;
    }
    uint32_t n = (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | v[3];
    out += static_cast<char>(n >> 16);
    if (pad < 2) out += static_cast<char>((n >> 8) & 0xFF);
    if (pad < 1) out += static_cast<char>(n & 0xFF);
  }
  return out;
}

}  // namespace agentd
