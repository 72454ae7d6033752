#include "server/request.h"

#include "server/connection.h"

namespace agentd {

bool Request::PeerClosed() { return conn_.PeerClosed(); }
bool Request::PeerSentBytes() { return conn_.PeerSentBytes(); }
void Request::WaitPeerReadable(std::function<void(const asio::error_code&)> fn) {
  conn_.WaitPeerReadable(std::move(fn));
}
void Request::CancelPeerWait() { conn_.CancelPeerWait(); }
const ServerLimits& Request::limits() const { return conn_.limits(); }

std::string_view Request::Param(std::string_view name) const {
  for (const auto& [k, v] : params_) {
    if (k == name) return v;
  }
  return {};
}

asio::awaitable<Result<std::string_view>> Request::ReadBody() { return conn_.NextBodyChunk(); }

asio::awaitable<Result<size_t>> Request::ReadBodyInto(char* dst, size_t cap) {
  return conn_.ReadBodyInto(dst, cap);
}

bool Request::body_complete() const { return conn_.body_complete(); }

asio::awaitable<Result<std::string>> Request::ReadBodyAll(size_t limit) {
  auto too_large = [&](uint64_t size) {
    return Status::Error(ErrorCode::kPayloadTooLarge, "request body of " + std::to_string(size) +
                                                          " bytes exceeds the limit of " +
                                                          std::to_string(limit) + " bytes")
        .With("size", size)
        .With("limit", limit);
  };
  if (head_.content_length && *head_.content_length > limit) {
    co_return too_large(*head_.content_length);
  }
  std::string body;
  for (;;) {
    Result<std::string_view> chunk = co_await ReadBody();
    if (!chunk.ok()) co_return chunk.status();
    if (chunk->empty()) break;
    if (body.size() + chunk->size() > limit) co_return too_large(body.size() + chunk->size());
    body.append(*chunk);
  }
  co_return body;
}

asio::awaitable<Result<json::Value>> Request::ReadJson() {
  Result<std::string> body = co_await ReadBodyAll(conn_.limits().max_json_body_bytes);
  if (!body.ok()) co_return body.status();
  if (body->empty()) co_return Status::InvalidRequest("request body must be a JSON object");
  co_return json::Parse(*body);
}

}  // namespace agentd
