// The HTTP server's bounds, all in one place. Each has a daemon flag
// (config/flags.cc) and a default here; each refusal names its limit and
// the real numbers in the error details.
#pragma once

#include <chrono>
#include <cstddef>

namespace agentd {

struct ServerLimits {
  // Request line plus all header lines; over it: 431 headers_too_large.
  size_t max_header_bytes = 16 * 1024;
  size_t max_header_count = 100;
  // JSON bodies (streamed bodies such as file uploads are not held in
  // memory and have their own limits); over it: 413 payload_too_large.
  size_t max_json_body_bytes = 1024 * 1024;
  // Open connections; over it a new connection gets 503 and is closed.
  size_t max_connections = 1024;
  // Bytes of a response queued for one connection at a time (a slow
  // reader pauses its producer instead of growing memory).
  size_t max_write_queue_bytes = 256 * 1024;
  // Between requests on a keep-alive connection.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(120)};
  // From a request's first byte to the end of its headers: a client that
  // trickles its header is cut off here however steadily it sends.
  std::chrono::milliseconds header_timeout{std::chrono::seconds(10)};
  // Longest wait for progress on a request body read or a response write.
  std::chrono::milliseconds io_timeout{std::chrono::seconds(60)};
  // A request body must bring at least this many bytes per io_timeout of
  // waiting for it (time its handler spends elsewhere does not count), so
  // a client trickling a byte at a time cannot hold a connection and a
  // transfer thread for ever: 16 KiB a minute by default, far below any
  // real link.
  size_t min_body_bytes_per_window = 16 * 1024;
  // Unread request body the server still drains to keep a connection alive
  // after a handler answered early; beyond it the connection is closed.
  size_t max_drain_bytes = 256 * 1024;
  // A connection closed while its client may still be sending (an answer
  // before the whole body, a refused head) first stops sending and reads
  // and discards for up to this long and this many bytes, so the client
  // can finish its write and read the answer: a close with unread bytes
  // makes the kernel reset the connection, and the client sees a broken
  // pipe instead of the answer (the "lingering close" of RFC 9112 9.6).
  std::chrono::milliseconds linger_timeout{std::chrono::seconds(10)};
  size_t linger_max_bytes = 64 * 1024 * 1024;
};

}  // namespace agentd
