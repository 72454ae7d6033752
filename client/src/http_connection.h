// HttpConnection: one HTTP/1.1 connection to the daemon (TCP, Unix socket
// or vsock), used for one request at a time.
//
// Every operation takes an absolute deadline; when it passes, the pending
// socket operation is cancelled and the call answers deadline_exceeded.
// Failures of the byte stream are transport_error. After a response was
// read to its end on a keep-alive connection, reusable() is true and the
// pool may hand the connection to the next request. Not thread-safe; used
// on one executor.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/client/options.h"
#include "http_response_parser.h"

namespace agentd::client {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

class HttpConnection {
 public:
  explicit HttpConnection(asio::any_io_executor executor);

  asio::awaitable<Status> Connect(const Endpoint& endpoint, Deadline deadline);
  // Writes bytes (a request head, a body, a chunk).
  asio::awaitable<Status> Write(std::vector<asio::const_buffer> buffers, Deadline deadline);
  asio::awaitable<Status> Write(std::string_view bytes, Deadline deadline);
  // Writes the first `length` bytes of the regular file `fd` with
  // sendfile(2) (the kernel moves them; none pass through this process).
  // A file shorter than `length` is io_error and closes the connection.
  asio::awaitable<Status> SendFile(int fd, uint64_t length, Deadline deadline);

  // Reads the response head. `head_request` tells the parser there is no body.
  // With `keep_on_timeout` a passing deadline leaves the connection open
  // (waiting for "100 Continue" that a server may never send).
  asio::awaitable<Result<ResponseHead>> ReadHead(bool head_request, Deadline deadline,
                                                 bool keep_on_timeout = false);
  // Marks the connection as not reusable (its request was abandoned).
  void DiscardAfterUse() { keep_alive_ = false; }
  // The next body chunk; empty at the end of the body. Valid until the next call.
  asio::awaitable<Result<std::string_view>> ReadBody(Deadline deadline);
  // The same, blocking in poll(2) instead of suspending: for a worker
  // thread while no coroutine uses the connection (a tree download's
  // extractor reads the body itself, so no block crosses threads).
  Result<std::string_view> ReadBodyBlocking(Deadline deadline);
  // The rest of the body into the descriptor `fd` (from its current
  // offset); answers the bytes written. The bytes already buffered are
  // written first; the rest of a Content-Length body then moves socket ->
  // pipe -> fd by splice(2), never through this process's memory. Where
  // splice is refused (a chunked body; `fd` opened O_APPEND, or of a kind
  // splice cannot write; a socket type it cannot read) the bytes go
  // through the buffer and write(2), none lost or written twice. `wait`
  // bounds each wait for more of the body; `progress` (may be empty) hears
  // each batch written. A failure to write `fd` is io_error and closes the
  // connection (its body was not consumed).
  asio::awaitable<Result<uint64_t>> ReadBodyToFd(int fd, std::chrono::milliseconds wait,
                                                 const std::function<void(uint64_t)>& progress);
  // The rest of the body, refused beyond `limit` bytes.
  asio::awaitable<Result<std::string>> ReadBodyAll(size_t limit, Deadline deadline);

  // Bytes received past an upgrade (101) response, then raw socket access.
  std::string TakeUpgradeBytes();
  asio::generic::stream_protocol::socket& socket() { return socket_; }

  // While set, the reads of ReadHead/ReadBody wait in poll(2) on this
  // thread instead of suspending on the executor: for the synchronous
  // Client's one call in flight, when nothing else on its io_context could
  // run meanwhile (Transport decides, per request). Saves the reactor's
  // round (timer arming, epoll_wait, dispatch) on every answer.
  void set_blocking_wait(bool on) { blocking_wait_ = on; }

  bool reusable() const { return open_ && message_done_ && keep_alive_; }
  bool open() const { return open_; }
  // True when the idle connection was closed by the daemon (checked before reuse).
  bool PeerClosed();
  void Close();

 private:
  asio::awaitable<Result<size_t>> ReadSome(Deadline deadline, bool keep_on_timeout = false);
  // `poll_first`: wait before the first read (an answer not yet sent).
  Result<size_t> ReadSomeBlocking(Deadline deadline, bool keep_on_timeout, bool poll_first);
  // Suspends until the socket is readable (an empty error_code), fails, or
  // `deadline` passes (*timed_out; the connection stays open).
  asio::awaitable<asio::error_code> WaitReadable(Deadline deadline, bool* timed_out);
  void CompactBuffer();
  // What ReadBody answers without reading the socket: a chunk, the end, or
  // nullopt (read more); after a read of `got` bytes (0: the peer closed).
  std::optional<Result<std::string_view>> NextBuffered();
  Status AfterRead(size_t got);
  Status FeedParser();
  // The `left` body bytes after the buffered ones, read past the parser
  // (by splice, else recv into the buffer) into `fd`; *total counts them.
  asio::awaitable<Status> MoveBodyToFd(int fd, uint64_t left, std::chrono::milliseconds wait,
                                       const std::function<void(uint64_t)>& progress,
                                       uint64_t* total);
  // After a read of the body that moved nothing (`n` 0: the peer closed;
  // -1 with `err`): Ok to read again (EINTR, or EAGAIN and the socket
  // turned readable within `wait`); else the connection is closed and the
  // status says why (cut mid-body, timeout, lost).
  asio::awaitable<Status> AwaitMoreBody(ssize_t n, int err, std::chrono::milliseconds wait);

  asio::generic::stream_protocol::socket socket_;
  asio::steady_timer timer_;
  ResponseParser parser_;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;
  std::vector<std::string_view> body_;
  size_t body_next_ = 0;
  uint64_t body_seen_ = 0;  // body bytes the parser handed out since the head
  bool head_done_ = false;
  bool message_done_ = false;
  bool upgraded_ = false;
  bool keep_alive_ = false;
  bool open_ = false;
  bool blocking_wait_ = false;
  // WaitReadable's deadline: the number of the wait its timer handler may
  // cancel, whether it did, and a token the handler checks first (a handler
  // queued when the connection is destroyed must not touch it).
  uint64_t wait_number_ = 0;
  bool deadline_passed_ = false;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace agentd::client
