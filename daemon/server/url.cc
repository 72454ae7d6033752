#include "server/url.h"

namespace agentd {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<std::string> PercentDecode(std::string_view in, bool plus_is_space) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return std::nullopt;
      int hi = HexValue(in[i + 1]);
      int lo = HexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string PercentEncode(std::string_view in, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : in) {
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/');
    if (unreserved) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

Result<ParsedTarget> ParseTarget(std::string_view target) {
  if (target.empty() || target.front() != '/') {
    return Status::InvalidRequest("the request target must be a path starting with \"/\"");
  }
  ParsedTarget out;
  size_t q = target.find('?');
  std::string_view raw_path = target.substr(0, q);
  if (size_t hash = raw_path.find('#'); hash != std::string_view::npos) {
    raw_path = raw_path.substr(0, hash);
  }
  auto path = PercentDecode(raw_path, false);
  if (!path) return Status::InvalidRequest("malformed percent-escape in the request path");
  out.path = std::move(*path);
  if (q == std::string_view::npos) return out;
  std::string_view query = target.substr(q + 1);
  if (size_t hash = query.find('#'); hash != std::string_view::npos) query = query.substr(0, hash);
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    auto key = PercentDecode(pair.substr(0, eq), true);
    auto value = PercentDecode(eq == std::string_view::npos ? "" : pair.substr(eq + 1), true);
    if (!key || !value) {
      std::string name = key ? *key : std::string(pair.substr(0, eq));
      return Status::InvalidRequest("malformed percent-escape in query parameter \"" + name + "\"")
          .With("field", name);
    }
    out.query.emplace_back(std::move(*key), std::move(*value));
  }
  return out;
}

}  // namespace agentd
