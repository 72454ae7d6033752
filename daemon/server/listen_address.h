// Listen addresses of the --listen flag, parsed by agentd/protocol/address.h
// (the grammar the clients' URLs share), plus the checks and the socket
// endpoint only a listener needs. No name resolution: a static daemon has
// no NSS, so a TCP host must be a numeric address (or "localhost").
#pragma once

#include <string>
#include <string_view>

#include "agentd/protocol/address.h"
#include "agentd/protocol/status.h"
#include "server/socket.h"

namespace agentd {

struct ListenAddress : Address {
  std::string text;  // as given, for logs

  static Result<ListenAddress> Parse(std::string_view text);
  StreamProtocol::endpoint Endpoint() const;
};

}  // namespace agentd
