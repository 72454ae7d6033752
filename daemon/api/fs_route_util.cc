#include "api/fs_route_util.h"

namespace agentd {

Headers ErrorHeaders(const Status& error) {
  Headers h;
  if (error.code() != ErrorCode::kPreconditionFailed) return h;
  const json::Value* etag = error.details().Find("etag");
  if (etag && etag->is_string()) h.emplace_back("ETag", etag->as_string());
  return h;
}

asio::awaitable<void> AnswerFromPool(asio::thread_pool& pool, Response& res, JsonJob fn) {
  Result<json::Value> out = co_await RunBlocking(pool, std::move(fn));
  if (!out.ok()) {
    co_await res.SendError(out.status(), ErrorHeaders(out.status()));
  } else {
    co_await res.SendJson(200, *out);
  }
}

asio::awaitable<bool> DiscardBody(Request& req, Response& res, uint64_t limit) {
  uint64_t drained = 0;
  while (drained <= limit) {
    Result<std::string_view> chunk = co_await req.ReadBody();
    if (!chunk.ok()) co_return false;
    if (chunk->empty()) co_return true;
    drained += chunk->size();
  }
  res.CloseAfter();
  co_return true;
}

asio::awaitable<void> RefuseMidBody(Request& req, Response& res, const Status& error) {
  bool client_there = co_await DiscardBody(req, res, kRefusalDrainBytes);
  if (!client_there) co_return;  // nobody to answer
  co_await res.SendError(error, ErrorHeaders(error));
}

asio::awaitable<Status> PumpBody(Request& req, ByteChannel& channel, metrics::Counter& counted) {
  // The body is read into blocks of kPumpBlockBytes, so the job wakes and
  // writes once per block; a Content-Length body straight from the socket
  // (Request::ReadBodyInto: no copy through the connection's buffer). The
  // blocks the job has written come back through the channel at their
  // size (ByteChannel::Recycle), so a refill overwrites them: neither
  // allocated nor zeroed again.
  for (;;) {
    std::string block = channel.TakeSpare();
    block.resize(kPumpBlockBytes);
    size_t filled = 0;
    bool end = false;
    while (filled < block.size()) {
      Result<size_t> n = co_await req.ReadBodyInto(block.data() + filled, block.size() - filled);
      if (!n.ok()) {
        channel.Close();
        co_return n.status();
      }
      if (*n == 0) {
        end = true;
        break;
      }
      filled += *n;
    }
    if (filled > 0) {
      block.resize(filled);
      counted.Inc(filled);
      bool taken = co_await channel.AsyncPush(std::move(block));
      if (!taken) co_return Status::Ok();
    }
    if (end) {
      channel.Finish();
      co_return Status::Ok();
    }
  }
}

asio::awaitable<bool> SendChannel(ByteChannel& channel, Response& res, metrics::Counter* counted) {
  for (;;) {
    std::optional<std::string> chunk = co_await channel.AsyncPop();
    if (!chunk) co_return true;
    Status wrote = co_await res.Write(*chunk);
    if (!wrote.ok()) {
      channel.Close();
      co_return false;
    }
    if (counted) counted->Inc(chunk->size());
    channel.Recycle(std::move(*chunk));  // the producer's next buffer (TarWriter)
  }
}

}  // namespace agentd
