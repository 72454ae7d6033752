// One socket type for every transport (TCP, Unix, vsock): Asio's generic
// stream protocol, so connections and handlers never care which it is.
#pragma once

#include <asio.hpp>

namespace agentd {

using StreamProtocol = asio::generic::stream_protocol;
using Socket = StreamProtocol::socket;
using Acceptor = asio::basic_socket_acceptor<StreamProtocol>;

}  // namespace agentd
