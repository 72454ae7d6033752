#include "agentd/protocol/address.h"

#include <charconv>

namespace agentd {
namespace {

bool ParseNumber(std::string_view s, uint32_t max, uint32_t* out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && *out <= max;
}

bool UnixPathFits(std::string_view path) {
  return !path.empty() && path.size() <= kMaxUnixSocketPathBytes;
}

// "[v6]" becomes "v6"; anything else stays as it is.
std::string_view Unbracket(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    return host.substr(1, host.size() - 2);
  }
  return host;
}

Status BadListen(std::string_view text, std::string_view why) {
  return Status::InvalidRequest("invalid listen address \"" + std::string(text) +
                                "\": " + std::string(why));
}

Status BadUrl(std::string_view url, std::string_view why) {
  return Status::InvalidRequest("invalid daemon URL \"" + std::string(url) +
                                "\": " + std::string(why))
      .With("url", std::string(url));
}

// The "HOST[:PORT]" of an http URL.
Result<Address> ParseHttpAuthority(std::string_view url, std::string_view rest) {
  Address a;
  std::string_view host;
  std::string_view port = "80";
  if (rest.starts_with("[")) {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) return BadUrl(url, "unterminated IPv6 address");
    host = rest.substr(1, close - 1);
    rest = rest.substr(close + 1);
    if (rest.starts_with(":")) {
      port = rest.substr(1);
    } else if (!rest.empty()) {
      return BadUrl(url, "unexpected text after the address");
    }
  } else {
    size_t colon = rest.rfind(':');
    host = rest.substr(0, colon);
    if (colon != std::string_view::npos) port = rest.substr(colon + 1);
  }
  if (host.empty()) return BadUrl(url, "missing host");
  if (!ParseNumber(port, 65535, &a.port) || a.port == 0) return BadUrl(url, "bad port");
  a.host = host;
  return a;
}

}  // namespace

Result<Address> ParseListenAddress(std::string_view text) {
  Address a;
  if (text.starts_with("unix:")) {
    a.kind = Address::Kind::kUnix;
    a.path = text.substr(5);
    if (!UnixPathFits(a.path)) return BadListen(text, "the socket path must be 1 to 107 bytes");
    return a;
  }
  if (text.starts_with("vsock:")) {
    a.kind = Address::Kind::kVsock;
    if (!ParseNumber(text.substr(6), UINT32_MAX, &a.port)) {
      return BadListen(text, "expected vsock:PORT");
    }
    return a;
  }
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return BadListen(text, "expected HOST:PORT");
  std::string_view host = Unbracket(text.substr(0, colon));
  if (host == "localhost") host = "127.0.0.1";
  if (host.empty()) host = "0.0.0.0";
  if (!ParseNumber(text.substr(colon + 1), 65535, &a.port)) return BadListen(text, "bad port");
  a.host = host;
  return a;
}

Result<Address> ParseDaemonUrl(std::string_view url) {
  Address a;
  if (url.starts_with("unix:")) {
    a.kind = Address::Kind::kUnix;
    std::string_view path = url.substr(5);
    if (path.starts_with("//")) path.remove_prefix(2);  // unix:///path
    if (!UnixPathFits(path)) return BadUrl(url, "the socket path must be 1 to 107 bytes");
    a.path = path;
    return a;
  }
  if (url.starts_with("vsock:")) {
    a.kind = Address::Kind::kVsock;
    std::string_view rest = url.substr(6);
    if (rest.starts_with("//")) rest.remove_prefix(2);
    size_t colon = rest.find(':');
    if (colon == std::string_view::npos ||
        !ParseNumber(rest.substr(0, colon), UINT32_MAX, &a.cid) ||
        !ParseNumber(rest.substr(colon + 1), UINT32_MAX, &a.port)) {
      return BadUrl(url, "expected vsock:CID:PORT");
    }
    return a;
  }
  if (!url.starts_with("http://")) return BadUrl(url, "expected http://, unix: or vsock:");
  std::string_view rest = url.substr(7);
  if (size_t slash = rest.find('/'); slash != std::string_view::npos) {
    if (rest.substr(slash) != "/") return BadUrl(url, "the URL must not have a path");
    rest = rest.substr(0, slash);
  }
  return ParseHttpAuthority(url, rest);
}

}  // namespace agentd
