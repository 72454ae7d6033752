// The JSON body of a request, read and decoded in one step, so a route
// handles one Result whatever went wrong (too large, invalid JSON, a field
// the decoder refuses, an unexpected query parameter) and sends its error.
#pragma once

#include <utility>

#include "agentd/protocol/json.h"
#include "api/query_reader.h"
#include "server/request.h"

namespace agentd {

// `decode` is a protocol decoder, Result<T>(const json::Value&).
template <typename Decode>
auto ReadBody(Request& req, Decode decode)
    -> asio::awaitable<decltype(decode(std::declval<const json::Value&>()))> {
  Result<json::Value> doc = co_await req.ReadJson();
  if (!doc.ok()) co_return doc.status();
  co_return decode(*doc);
}

// For routes that take no query parameters: any given is refused first.
template <typename Decode>
auto ReadBodyWithoutQuery(Request& req, Decode decode)
    -> asio::awaitable<decltype(decode(std::declval<const json::Value&>()))> {
  if (Status s = QueryReader(req.query()).Finish(); !s.ok()) co_return s;
  auto body = co_await ReadBody(req, decode);
  co_return body;
}

}  // namespace agentd
