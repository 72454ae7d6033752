// Request: what a route handler sees of one HTTP request.
//
// The head (method, path, query, headers) is fully parsed; the body is a
// stream the handler pulls chunk by chunk, so an upload is never held in
// memory whole. Owned by the connection for the duration of one handler
// call; used only on the connection's strand (the io thread).
#pragma once

#include <asio/awaitable.hpp>
#include <asio/error_code.hpp>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agentd/protocol/status.h"
#include "server/http_parser.h"
#include "server/limits.h"
#include "server/url.h"

namespace agentd {

class Connection;

class Request {
 public:
  Request(Connection& conn, const RequestHead& head, ParsedTarget target)
      : conn_(conn), head_(head), target_(std::move(target)) {}

  const std::string& method() const { return head_.method; }
  const std::string& path() const { return target_.path; }
  const RequestHead& head() const { return head_; }
  // Read through api/query_reader.h, which refuses what a route does not know.
  const QueryParams& query() const { return target_.query; }
  const std::string* Header(std::string_view lower_name) const { return head_.Header(lower_name); }
  std::optional<uint64_t> content_length() const { return head_.content_length; }

  // Route parameters ({id} in the route pattern), set by the router.
  std::string_view Param(std::string_view name) const;
  void set_params(std::vector<std::pair<std::string, std::string>> params) {
    params_ = std::move(params);
  }
  const std::string& route_pattern() const { return route_pattern_; }
  void set_route_pattern(std::string pattern) { route_pattern_ = std::move(pattern); }

  // The next chunk of the body; an empty view once the body has ended.
  // The view is valid until the next call. A client that disconnects or
  // stalls mid-body yields an error Status.
  asio::awaitable<Result<std::string_view>> ReadBody();
  // Up to `cap` bytes of the body copied into `dst`; 0 once it has ended.
  // A Content-Length body is received straight into `dst` (one copy less
  // than ReadBody for a large upload). Errors as ReadBody.
  asio::awaitable<Result<size_t>> ReadBodyInto(char* dst, size_t cap);
  // The whole body, refused with 413 payload_too_large (naming `limit` and
  // the declared or received size) when it exceeds `limit` bytes.
  asio::awaitable<Result<std::string>> ReadBodyAll(size_t limit);
  // The body parsed as JSON (bounded by the server's JSON body limit).
  asio::awaitable<Result<json::Value>> ReadJson();
  bool body_complete() const;

  // See Connection: a stream or a long wait ends early when its client left.
  bool PeerClosed();
  bool PeerSentBytes();
  void WaitPeerReadable(std::function<void(const asio::error_code&)> fn);
  void CancelPeerWait();
  // The server's bounds (JSON body size, I/O progress timeout).
  const ServerLimits& limits() const;

  // The connection's peer and transport, for logs.
  Connection& connection() { return conn_; }

 private:
  Connection& conn_;
  const RequestHead& head_;
  ParsedTarget target_;
  std::vector<std::pair<std::string, std::string>> params_;
  std::string route_pattern_;
};

}  // namespace agentd
