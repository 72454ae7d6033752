// The search and glob calls of AsyncClient, as free coroutines over the
// transport.
#pragma once

#include <asio.hpp>
#include <string>

#include "agentd/client/search.h"
#include "transport.h"

namespace agentd::client {

asio::awaitable<Result<SearchResult>> SearchCall(Transport& t, std::string path,
                                                 std::string pattern, SearchOptions options);
asio::awaitable<Result<GlobResponse>> GlobCall(Transport& t, std::string path, std::string pattern,
                                               WalkQuery query);

}  // namespace agentd::client
