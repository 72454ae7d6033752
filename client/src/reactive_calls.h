// Watch and tunnel calls of AsyncClient, as free coroutines over
// the transport.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "agentd/client/reactive.h"
#include "transport.h"

namespace agentd::client {

asio::awaitable<Result<uint64_t>> WatchCall(Transport& t, std::string path, WatchOptions options,
                                            WatchCallbacks callbacks);
asio::awaitable<Result<std::vector<GuestPort>>> ListPortsCall(Transport& t);
// The condition waits on ports and paths: long-poll rounds until the
// daemon says the condition holds or `timeout` passed.
asio::awaitable<Result<bool>> WaitForPortCall(Transport& t, uint16_t port,
                                              std::optional<std::chrono::milliseconds> timeout);
asio::awaitable<Result<bool>> WaitForPathCall(Transport& t, std::string path, bool gone,
                                              std::optional<std::chrono::milliseconds> timeout);
asio::awaitable<Result<std::unique_ptr<Tunnel>>> OpenTunnelCall(Transport& t, uint16_t port);

}  // namespace agentd::client
