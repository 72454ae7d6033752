// Connection: one client connection, from accept to close.
//
// A coroutine reads a request head (idle deadline before its first byte,
// header deadline after), hands the request to the handler, then drains
// what the handler left of the body and loops for the next request on a
// keep-alive connection. Pipelined requests are answered strictly in order
// because the parser pauses after each message. A watchdog enforces every
// deadline by cancelling the socket's pending operation. Runs entirely on
// the io thread; shared ownership keeps it alive while its coroutines run.
#pragma once

#include <array>
#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/protocol/status.h"
#include "server/http_parser.h"
#include "server/limits.h"
#include "server/request.h"
#include "server/response.h"
#include "server/socket.h"

namespace agentd {

using RequestHandler = std::function<asio::awaitable<void>(Request&, Response&)>;

class ConnectionRegistry;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Socket socket, const ServerLimits& limits, const RequestHandler& handler,
             ConnectionRegistry& registry, uint64_t id);
  ~Connection();

  void Start();
  // Closes the socket now (shutdown, or refusal). Safe to call twice.
  void Close();
  // Lets the request in flight finish, then closes (shutdown).
  void CloseAfterRequest() { close_after_request_ = true; }
  // True between requests (nothing in flight): shutdown closes these first.
  bool idle() const { return !in_request_; }
  // An upgrade in place (server/connection_handover.cc): while the
  // connection waits for a request head, the bytes of it read so far
  // (empty: none yet), which the next binary parses again; nullopt inside
  // a request, while closing, or when the head outgrew the buffer.
  std::optional<std::string_view> WaitingHead() const;
  // The next binary: those bytes, before Start(). At most kReadBufferBytes.
  void Preload(std::string_view head);
  // An upgrade became pending: the read an idle connection waits with is
  // cancelled (its bytes, if it took any, are counted when it completes),
  // and the connection waits for readability instead. Until that read's
  // completion has run, first_read_in_flight(): bytes the kernel gave it
  // are in first_read_ but not yet in the head, and an execve loses them.
  void StopFirstRead();
  bool first_read_in_flight() const { return first_read_in_flight_; }
  static constexpr size_t kReadBufferBytes = 64 * 1024;
  uint64_t id() const { return id_; }
  Socket& socket() { return socket_; }
  const ServerLimits& limits() const { return limits_; }
  // What the peer did while a handler streams or waits, without reading
  // its bytes (they belong to the next request): closed its side, or sent
  // something. Both look, never block.
  bool PeerClosed();
  bool PeerSentBytes();
  // Calls `fn` once the socket is readable (bytes or a close), or with
  // operation_aborted after CancelPeerWait().
  void WaitPeerReadable(std::function<void(const asio::error_code&)> fn);
  void CancelPeerWait();

  // For Request and Response; see their headers for the contracts.
  asio::awaitable<Result<std::string_view>> NextBodyChunk();
  // Up to `cap` bytes of the body into `dst`; 0 at its end. A
  // Content-Length body is received from the socket straight into `dst`
  // once the bytes read with the head are used up (no copy through the
  // connection's buffer); a chunked one goes through it.
  asio::awaitable<Result<size_t>> ReadBodyInto(char* dst, size_t cap);
  bool body_complete() const { return message_complete_; }
  // (GCC 12 cannot pass a braced list into a co_await expression, so
  // callers build the vector first or use the one-buffer form.)
  asio::awaitable<Status> WriteAll(std::vector<asio::const_buffer> buffers);
  asio::awaitable<Status> WriteAll(asio::const_buffer buffer);
  // `prefix`, then `length` bytes of `fd` from `offset` (sendfile).
  asio::awaitable<Status> SendFile(std::string_view prefix, int fd, uint64_t offset,
                                   uint64_t length);
  // `prefix`, then the next `length` bytes of the pipe `pipe_fd`, which
  // holds at least that many (splice: the pipe's pages go to the socket).
  asio::awaitable<Status> SendPipe(std::string_view prefix, int pipe_fd, uint64_t length);
  // For a route that switched protocols (101): the bytes the client sent
  // past the request head, which belong to the new protocol. From then on
  // the route owns the byte stream and the connection closes after it.
  std::string TakeOver();

 private:
  asio::awaitable<void> Run();
  // SendFile and SendPipe: `prefix` with MSG_MORE, then `length` bytes by
  // `move` (a sendfile or splice of at most its argument; < 0 and errno as
  // the call's), waiting for room in the socket.
  template <typename Move>
  asio::awaitable<Status> SendPrefixed(std::string_view prefix, uint64_t length, Move move);
  asio::awaitable<void> Watchdog();
  // true: a head is ready; false: the peer closed or idled out between requests.
  asio::awaitable<Result<bool>> ReadHead();
  // Handles one request; false when the connection must close afterwards.
  asio::awaitable<bool> Serve();
  asio::awaitable<bool> DrainBody();
  // Before a close that may cut a client mid-send (limits.h, linger_*).
  asio::awaitable<void> LingerBeforeClose();
  asio::awaitable<void> SendEarlyError(const Status& error);
  Status Feed();
  void Compact();
  void CompactKeepingHead();
  void Arm(std::chrono::milliseconds timeout);
  void Disarm();
  Status LostConnection(const asio::error_code& ec, std::string_view during);
  // After a non-blocking send that moved nothing (send_errno): waits for
  // room in the socket on EAGAIN, else marks the connection broken.
  asio::awaitable<Status> AwaitRoom(int send_errno);

  Socket socket_;
  const ServerLimits& limits_;
  const RequestHandler& handler_;
  ConnectionRegistry& registry_;
  uint64_t id_;
  RequestParser parser_;
  asio::steady_timer timer_;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();

  // Allocated when bytes arrive, freed while idle (RSS with many idle
  // keep-alive connections), and never zeroed: a zeroed 64 KiB per request
  // was 6% of a health request's time.
  std::unique_ptr<char[]> buf_;
  size_t buf_size_ = 0;
  // Where an idle connection's next bytes arrive (ReadHead): most request
  // heads fit, a longer one goes on in buf_.
  std::array<char, 1024> first_read_;
  size_t begin_ = 0;  // first unparsed byte
  size_t end_ = 0;    // one past the last received byte
  std::deque<std::string_view> body_queue_;
  // The head being read starts here: ReadHead() keeps its bytes in the
  // buffer after parsing them, for WaitingHead().
  size_t head_begin_ = 0;
  bool head_kept_ = true;
  bool first_read_in_flight_ = false;
  bool first_read_stopped_ = false;  // cancelled by StopFirstRead(), not closed
  bool waiting_for_head_ = true;     // in (or about to enter) ReadHead()
  bool head_ready_ = false;
  bool message_complete_ = false;
  bool continue_sent_ = false;
  // The body's current progress window (limits_.min_body_bytes_per_window).
  std::chrono::steady_clock::duration body_window_waited_{};
  size_t body_window_bytes_ = 0;
  std::optional<Status> body_timeout_;  // the body was cut by its deadline

  bool in_request_ = false;
  bool timed_out_ = false;
  bool broken_ = false;  // the byte stream is unusable (mid-body error)
  bool closed_ = false;
  bool close_after_request_ = false;
  bool may_still_send_ = false;  // closing with part of a request unread
  bool taken_over_ = false;      // the bytes belong to a switched protocol
};

// The set of open connections, for limits, metrics and shutdown.
class ConnectionRegistry {
 public:
  virtual ~ConnectionRegistry() = default;
  virtual void Remove(uint64_t id) = 0;
  // An upgrade in place is pending: connections read only what they count
  // at once (server/connection_handover.cc).
  virtual bool handing_over() const { return false; }
};

}  // namespace agentd
