// Watch and tunnel calls of AsyncClient, as free coroutines over
// the transport.
#pragma once

#include <asio.hpp>
#include <memory>
#include <string>

#include "agentd/client/reactive.h"
#include "transport.h"

namespace agentd::client {

asio::awaitable<Result<uint64_t>> WatchCall(Transport& t, std::string path, WatchOptions options,
                                            WatchCallbacks callbacks);
asio::awaitable<Result<std::vector<GuestPort>>> ListPortsCall(Transport& t);
asio::awaitable<Result<std::unique_ptr<Tunnel>>> OpenTunnelCall(Transport& t, uint16_t port);

}  // namespace agentd::client
