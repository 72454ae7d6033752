// Listen addresses of the --listen flag: "HOST:PORT" (IPv4 literal,
// "[IPv6]", or "localhost"), "unix:/path", "vsock:PORT". No name
// resolution: a static daemon has no NSS.
#pragma once

#include <string>
#include <string_view>

#include "agentd/protocol/status.h"
#include "server/socket.h"

namespace agentd {

struct ListenAddress {
  enum class Kind { kTcp, kUnix, kVsock };
  Kind kind = Kind::kTcp;
  std::string text;   // as given, for logs
  std::string host;   // kTcp: numeric address
  std::string path;   // kUnix
  uint32_t port = 0;  // kTcp, kVsock

  StreamProtocol::endpoint Endpoint() const;
};

Result<ListenAddress> ParseListenAddress(std::string_view text);

}  // namespace agentd
