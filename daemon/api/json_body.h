// The JSON body of a request that takes no query parameters, read in one
// step: a route decodes it and handles one Result whatever went wrong (an
// unexpected query parameter, too large, invalid JSON, a field the
// decoder refuses):
//
//   Result<json::Value> doc = co_await ReadJsonWithoutQuery(req);
//   Result<RunRequest> run = doc.ok() ? DecodeRunRequest(*doc) : doc.status();
//
// One coroutine for every route (a template per request type cost a
// coroutine frame each in the binary).
#pragma once

#include <asio.hpp>

#include "agentd/protocol/json.h"
#include "agentd/protocol/status.h"
#include "server/request.h"

namespace agentd {

asio::awaitable<Result<json::Value>> ReadJsonWithoutQuery(Request& req);

}  // namespace agentd
