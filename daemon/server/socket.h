// One socket type for every transport (TCP, Unix, vsock): Asio's generic
// stream protocol, so connections and handlers never care which it is.
#pragma once

#include <sys/socket.h>

#include <asio.hpp>
#include <optional>

namespace agentd {

using StreamProtocol = asio::generic::stream_protocol;
using Socket = StreamProtocol::socket;
using Acceptor = asio::basic_socket_acceptor<StreamProtocol>;

// The protocol of a socket descriptor an upgrade in place handed over by
// number (a connection, a tunnel's client, a watch stream), read from the
// descriptor for Socket::assign; nullopt, errno set, when it is none.
inline std::optional<StreamProtocol> InheritedSocketProtocol(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  int protocol = 0;
  socklen_t plen = sizeof protocol;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      ::getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &plen) != 0) {
    return std::nullopt;
  }
  return StreamProtocol(addr.ss_family, protocol);
}

}  // namespace agentd
