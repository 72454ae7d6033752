#include "agentd/client/options.h"
#include "agentd/protocol/address.h"

namespace agentd::client {

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
  Result<Address> a = ParseDaemonUrl(url);
  if (!a.ok()) return a.status();
  Endpoint e;
  e.url = url;
  switch (a->kind) {
    case Address::Kind::kTcp:
      e.kind = Endpoint::Kind::kTcp;
      e.host = std::move(a->host);
      e.port = static_cast<uint16_t>(a->port);  // at most 65535
      break;
    case Address::Kind::kUnix:
      e.kind = Endpoint::Kind::kUnix;
      e.path = std::move(a->path);
      break;
    case Address::Kind::kVsock:
      e.kind = Endpoint::Kind::kVsock;
      e.cid = a->cid;
      e.vsock_port = a->port;
      break;
  }
  return e;
}

}  // namespace agentd::client
