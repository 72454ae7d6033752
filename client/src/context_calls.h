// The context calls of AsyncClient (docs/PROTOCOL.md, "Contexts").
#pragma once

#include <asio.hpp>
#include <string>
#include <vector>

#include "agentd/protocol/context.h"
#include "transport.h"

namespace agentd::client {

asio::awaitable<Result<ContextInfo>> CreateContextCall(Transport& t, ContextCreateRequest request);
asio::awaitable<Result<RunResponse>> RunInContextCall(Transport& t, std::string id,
                                                      ContextRunRequest request);
// GET, POST .../reset or DELETE of one context (`suffix`: "" or "/reset").
asio::awaitable<Result<ContextInfo>> ContextCall(Transport& t, std::string method, std::string id,
                                                 std::string suffix);
asio::awaitable<Result<std::vector<ContextInfo>>> ListContextsCall(Transport& t);

}  // namespace agentd::client
