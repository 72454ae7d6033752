#include "server/listen_address.h"

#include <linux/vm_sockets.h>
#include <sys/un.h>

#include <charconv>
#include <cstring>

namespace agentd {
namespace {

bool ParsePort(std::string_view s, uint32_t max, uint32_t* out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && *out <= max;
}

Status Bad(std::string_view text, std::string why) {
  return Status::InvalidRequest("invalid listen address \"" + std::string(text) + "\": " + why);
}

}  // namespace

Result<ListenAddress> ParseListenAddress(std::string_view text) {
  ListenAddress a;
  a.text = text;
  if (text.starts_with("unix:")) {
    a.kind = ListenAddress::Kind::kUnix;
    a.path = text.substr(5);
    if (a.path.empty() || a.path.size() >= sizeof(sockaddr_un::sun_path)) {
      return Bad(text, "the socket path must be 1 to 107 bytes");
    }
    return a;
  }
  if (text.starts_with("vsock:")) {
    a.kind = ListenAddress::Kind::kVsock;
    if (!ParsePort(text.substr(6), UINT32_MAX, &a.port)) return Bad(text, "expected vsock:PORT");
    return a;
  }
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return Bad(text, "expected HOST:PORT");
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost") host = "127.0.0.1";
  if (host.empty()) host = "0.0.0.0";
  asio::error_code ec;
  asio::ip::make_address(std::string(host), ec);
  if (ec) return Bad(text, "the host must be a numeric IP address or localhost");
  if (!ParsePort(text.substr(colon + 1), 65535, &a.port)) return Bad(text, "bad port");
  a.host = host;
  return a;
}

StreamProtocol::endpoint ListenAddress::Endpoint() const {
  switch (kind) {
    case Kind::kTcp: {
      asio::ip::tcp::endpoint ep(asio::ip::make_address(host), static_cast<uint16_t>(port));
      return StreamProtocol::endpoint(ep);
    }
    case Kind::kUnix: {
      sockaddr_un sa{};
      sa.sun_family = AF_UNIX;
      std::memcpy(sa.sun_path, path.data(), path.size());
      return StreamProtocol::endpoint(&sa, offsetof(sockaddr_un, sun_path) + path.size() + 1, 0);
    }
    case Kind::kVsock: {
      sockaddr_vm sa{};
      sa.svm_family = AF_VSOCK;
      sa.svm_cid = VMADDR_CID_ANY;
      sa.svm_port = port;
      return StreamProtocol::endpoint(&sa, sizeof(sa), 0);
    }
  }
  return {};
}

}  // namespace agentd
