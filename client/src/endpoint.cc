#include <charconv>

#include "agentd/client/options.h"

namespace agentd::client {
namespace {

template <typename T>
bool ParseNumber(std::string_view s, T max, T* out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && *out <= max;
}

Status Bad(std::string_view url, std::string_view why) {
  return Status::InvalidRequest("invalid daemon URL \"" + std::string(url) +
                                "\": " + std::string(why))
      .With("url", std::string(url));
}

}  // namespace

std::string Endpoint::HostHeader() const {
  switch (kind) {
    case Kind::kTcp:
      if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
      return host + ":" + std::to_string(port);
    case Kind::kUnix:
      return "agentd.unix";
    case Kind::kVsock:
      return "agentd.vsock";
  }
  return "agentd";
}

Result<Endpoint> ParseUrl(std::string_view url) {
  Endpoint e;
  e.url = url;
  if (url.starts_with("unix:")) {
    e.kind = Endpoint::Kind::kUnix;
    e.path = url.substr(5);
    if (e.path.starts_with("//")) e.path = e.path.substr(2);  // unix:///path
    if (e.path.empty() || e.path.size() > 107)
      return Bad(url, "the socket path must be 1-107 bytes");
    return e;
  }
  if (url.starts_with("vsock:")) {
    e.kind = Endpoint::Kind::kVsock;
    std::string_view rest = url.substr(6);
    if (rest.starts_with("//")) rest.remove_prefix(2);
    size_t colon = rest.find(':');
    if (colon == std::string_view::npos ||
        !ParseNumber<uint32_t>(rest.substr(0, colon), UINT32_MAX, &e.cid) ||
        !ParseNumber<uint32_t>(rest.substr(colon + 1), UINT32_MAX, &e.vsock_port)) {
      return Bad(url, "expected vsock:CID:PORT");
    }
    return e;
  }
  if (!url.starts_with("http://")) return Bad(url, "expected http://, unix: or vsock:");
  std::string_view rest = url.substr(7);
  if (size_t slash = rest.find('/'); slash != std::string_view::npos) {
    if (rest.substr(slash) != "/") return Bad(url, "the URL must not have a path");
    rest = rest.substr(0, slash);
  }
  std::string_view host;
  std::string_view port = "80";
  if (rest.starts_with("[")) {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) return Bad(url, "unterminated IPv6 address");
    host = rest.substr(1, close - 1);
    rest = rest.substr(close + 1);
    if (rest.starts_with(":"))
      port = rest.substr(1);
    else if (!rest.empty())
      return Bad(url, "unexpected text after the address");
  } else {
    size_t colon = rest.rfind(':');
    host = rest.substr(0, colon);
    if (colon != std::string_view::npos) port = rest.substr(colon + 1);
  }
  if (host.empty()) return Bad(url, "missing host");
  if (!ParseNumber<uint16_t>(port, 65535, &e.port) || e.port == 0) return Bad(url, "bad port");
  e.host = host;
  return e;
}

}  // namespace agentd::client
