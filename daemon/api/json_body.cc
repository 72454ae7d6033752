#include "api/json_body.h"

#include "api/query_reader.h"

namespace agentd {

asio::awaitable<Result<json::Value>> ReadJsonWithoutQuery(Request& req) {
  if (Status s = QueryReader(req.query()).Finish(); !s.ok()) co_return s;
  Result<json::Value> doc = co_await req.ReadJson();
  co_return doc;
}

}  // namespace agentd
