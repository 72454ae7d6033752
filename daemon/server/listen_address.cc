#include "server/listen_address.h"

#include <linux/vm_sockets.h>
#include <sys/un.h>

#include <cstring>

namespace agentd {

Result<ListenAddress> ListenAddress::Parse(std::string_view text) {
  Result<Address> parsed = ParseListenAddress(text);
  if (!parsed.ok()) return parsed.status();
  ListenAddress a;
  static_cast<Address&>(a) = std::move(*parsed);
  a.text = text;
  if (a.kind == Kind::kTcp) {
    asio::error_code ec;
    asio::ip::make_address(a.host, ec);
    if (ec) {
      return Status::InvalidRequest("invalid listen address \"" + std::string(text) +
                                    "\": the host must be a numeric IP address or localhost");
    }
  }
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
