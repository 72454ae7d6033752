// The completion token of every await in the client: errors come back as
// values (an error_code first in the tuple), never as exceptions.
#pragma once

#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>

namespace agentd::client {

inline constexpr auto kNothrow = asio::experimental::as_tuple(asio::use_awaitable);

}  // namespace agentd::client
