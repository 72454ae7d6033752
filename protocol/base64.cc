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
  if (text.empty()) return out;
  out.resize(text.size() / 4 * 3);
  char* p = out.data();
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  // Every quad but the last carries no padding: four table loads, one sign
  // test for all of them (invalid characters decode to -1), three stores.
  size_t last = text.size() - 4;
  for (size_t i = 0; i < last; i += 4) {
    int32_t a = kDecode[s[i]], b = kDecode[s[i + 1]], c = kDecode[s[i + 2]], d = kDecode[s[i + 3]];
    if ((a | b | c | d) < 0) return std::nullopt;
    uint32_t v = (uint32_t(a) << 18) | (uint32_t(b) << 12) | (uint32_t(c) << 6) | uint32_t(d);
    p[0] = static_cast<char>(v >> 16);
    p[1] = static_cast<char>(v >> 8);
    p[2] = static_cast<char>(v);
    p += 3;
  }
  // The last quad: "xx==" or "xxx=" padding allowed, nothing after it.
  int pad = (s[last + 3] == '=') + (s[last + 3] == '=' && s[last + 2] == '=');
  int32_t a = kDecode[s[last]], b = kDecode[s[last + 1]];
  int32_t c = pad >= 2 ? 0 : kDecode[s[last + 2]];
  int32_t d = pad >= 1 ? 0 : kDecode[s[last + 3]];
  if ((a | b | c | d) < 0) return std::nullopt;
  uint32_t v = (uint32_t(a) << 18) | (uint32_t(b) << 12) | (uint32_t(c) << 6) | uint32_t(d);
  *p++ = static_cast<char>(v >> 16);
  if (pad < 2) *p++ = static_cast<char>(v >> 8);
  if (pad < 1) *p++ = static_cast<char>(v);
  out.resize(static_cast<size_t>(p - out.data()));
  return out;
}

}  // namespace agentd
