#include "server/connection.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>

#include <strings.h>

#include <cerrno>
#include <cstring>

#include "log/log.h"
#include "server/url.h"
#include "sys/awaitable.h"

namespace agentd {
namespace {

// A best-effort error answer to a client that broke the protocol gets this
// long to leave; a client that does not read it loses it.
constexpr std::chrono::milliseconds kEarlyErrorTimeout{1000};

using Clock = std::chrono::steady_clock;

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

}  // namespace

Connection::Connection(Socket socket, const ServerLimits& limits, const RequestHandler& handler,
                       ConnectionRegistry& registry, uint64_t id)
    : socket_(std::move(socket)),
      limits_(limits),
      handler_(handler),
      registry_(registry),
      id_(id),
      parser_(limits.max_header_bytes, limits.max_header_count),
      timer_(socket_.get_executor()) {}

Connection::~Connection() = default;

void Connection::Start() {
  asio::error_code ec;
  socket_.native_non_blocking(true, ec);
  // The spawned functions own a reference until their coroutines run: a
  // Start() called outside the io thread only queues them (co_spawn then
  // posts), and the caller may drop its pointer first (found by fuzzing).
  auto self = shared_from_this();
  asio::co_spawn(
      socket_.get_executor(), [self] { return self->Run(); }, asio::detached);
  asio::co_spawn(
      socket_.get_executor(), [self] { return self->Watchdog(); }, asio::detached);
}

bool Connection::PeerClosed() {
  pollfd p{socket_.native_handle(), POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

bool Connection::PeerSentBytes() {
  pollfd p{socket_.native_handle(), POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

void Connection::WaitPeerReadable(std::function<void(const asio::error_code&)> fn) {
  socket_.async_wait(Socket::wait_read, std::move(fn));
}

void Connection::CancelPeerWait() {
  asio::error_code ignored;
  socket_.cancel(ignored);
}

void Connection::Close() {
  if (closed_) return;
  closed_ = true;
  asio::error_code ec;
  timer_.cancel();
  socket_.shutdown(asio::socket_base::shutdown_both, ec);
  socket_.close(ec);
  registry_.Remove(id_);
}

void Connection::Arm(std::chrono::milliseconds timeout) {
  deadline_ = Clock::now() + timeout;
  timed_out_ = false;
  // Wake the watchdog only when the new deadline comes before the one it
  // sleeps on; otherwise it re-reads deadline_ when it wakes.
  if (deadline_ < timer_.expiry()) timer_.cancel();
}

void Connection::Disarm() { deadline_ = Clock::time_point::max(); }

asio::awaitable<void> Connection::Watchdog() {
  auto self = shared_from_this();
  while (!closed_) {
    timer_.expires_at(deadline_);
    co_await timer_.async_wait(kUseNothrow);
    if (closed_) break;
    if (deadline_ <= Clock::now()) {
      timed_out_ = true;
      deadline_ = Clock::time_point::max();
      asio::error_code ec;
      socket_.cancel(ec);
    }
  }
}

asio::awaitable<void> Connection::Run() {
  auto self = shared_from_this();
  while (!closed_) {
    Result<bool> head = co_await ReadHead();
    waiting_for_head_ = false;
    if (!head.ok()) {
      co_await SendEarlyError(head.status());
      // A refused head (too large, malformed): the client may be sending
      // the rest of it, or a body, right now.
      may_still_send_ = head.status().code() != ErrorCode::kRequestTimeout;
      break;
    }
    if (!*head) break;
    bool keep_going = co_await Serve();
    if (!keep_going) {
      // Not after a body cut for its pace: that client is the one the
      // pace bound exists to stop.
      may_still_send_ = !message_complete_ && !timed_out_ && !body_timeout_;
      break;
    }
    waiting_for_head_ = true;
  }
  co_await LingerBeforeClose();
  Close();
}

asio::awaitable<void> Connection::LingerBeforeClose() {
  if (closed_ || !may_still_send_ || taken_over_) co_return;
  asio::error_code ec;
  socket_.shutdown(asio::socket_base::shutdown_send, ec);
  if (ec) co_return;
  if (!buf_) {
    buf_.reset(new char[kReadBufferBytes]);
    buf_size_ = kReadBufferBytes;
  }
  Arm(limits_.linger_timeout);
  size_t discarded = 0;
  while (!closed_ && discarded <= limits_.linger_max_bytes) {
    auto [read_ec, n] =
        co_await socket_.async_read_some(asio::buffer(buf_.get(), buf_size_), kUseNothrow);
    if (read_ec) break;  // the client closed (EOF), reset, or the linger time ran out
    discarded += n;
  }
  Disarm();
}

// Like Compact(), but the bytes of the head read so far stay while they
// fit: an upgrade hands them over (WaitingHead()). A head that outgrows the
// buffer (whitespace the parser does not count) is no longer kept. No
// buffer yet (a fresh or idle connection) is an empty head, not a full one.
void Connection::CompactKeepingHead() {
  if (head_kept_ && buf_ && head_begin_ == 0 && end_ == buf_size_) head_kept_ = false;
  size_t from = head_kept_ ? head_begin_ : begin_;
  if (from == end_) {
    begin_ = end_ = head_begin_ = 0;
  } else if (from > 0) {
    std::memmove(buf_.get(), buf_.get() + from, end_ - from);
    begin_ -= from;
    end_ -= from;
    head_begin_ = 0;
  }
}

std::optional<std::string_view> Connection::WaitingHead() const {
  if (!waiting_for_head_ || closed_ || !head_kept_) return std::nullopt;
  if (!buf_) return std::string_view();
  return std::string_view(buf_.get() + head_begin_, end_ - head_begin_);
}

void Connection::Preload(std::string_view head) {
  if (head.empty() || head.size() > kReadBufferBytes) return;
  buf_.reset(new char[kReadBufferBytes]);
  buf_size_ = kReadBufferBytes;
  std::memcpy(buf_.get(), head.data(), head.size());
  begin_ = 0;
  end_ = head.size();
}

void Connection::StopFirstRead() {
  if (!first_read_in_flight_ || closed_) return;
  first_read_stopped_ = true;
  // Its only pending operation: an idle connection waits on nothing else.
  asio::error_code ignored;
  socket_.cancel(ignored);
}

void Connection::Compact() {
  if (!body_queue_.empty()) return;  // queued spans point into the buffer
  if (begin_ == end_) {
    begin_ = end_ = 0;
  } else if (begin_ > 0) {
    std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
}

Status Connection::Feed() {
  Result<RequestParser::Progress> progress =
      parser_.Feed(std::string_view(buf_.get() + begin_, end_ - begin_));
  if (!progress.ok()) {
    broken_ = true;
    return progress.status();
  }
  begin_ += progress->consumed;
  for (std::string_view span : progress->body) body_queue_.push_back(span);
  if (progress->head_complete) head_ready_ = true;
  if (progress->message_complete) message_complete_ = true;
  return Status::Ok();
}

Status Connection::LostConnection(const asio::error_code& ec, std::string_view during) {
  broken_ = true;
  if (timed_out_) {
    Status timeout = Status::Error(ErrorCode::kRequestTimeout,
                                   "too little progress " + std::string(during) + " within " +
                                       std::to_string(limits_.io_timeout.count()) + " ms")
                         .With("timeout_ms", static_cast<int64_t>(limits_.io_timeout.count()));
    body_timeout_ = timeout;  // answered if the handler could not answer
    return timeout;
  }
  return Status::Error(ErrorCode::kTransport,
                       "connection lost " + std::string(during) + ": " + ec.message());
}

asio::awaitable<Result<bool>> Connection::ReadHead() {
  bool started = begin_ < end_;
  head_begin_ = begin_;
  head_kept_ = true;
  Arm(started ? limits_.header_timeout : limits_.idle_timeout);
  for (;;) {
    if (begin_ < end_) {
      if (!started) {
        started = true;
        Arm(limits_.header_timeout);
      }
      AGENTD_CO_RETURN_IF_ERROR(Feed());
      if (head_ready_) {
        Disarm();
        co_return true;
      }
    }
    CompactKeepingHead();
    if (!buf_ && !registry_.handing_over()) {
      // An idle connection holds no read buffer: its first bytes land in
      // first_read_ and move to one made then. A read, not an async_wait
      // for readability: Asio re-arms the descriptor (epoll_ctl) for each
      // such wait, and waits for a read on the registration it has (one
      // system call less per keep-alive request; docs/BENCHMARKS.md,
      // "Health against nginx"). Not while an upgrade is pending: a read
      // Asio completes at its start (speculatively) is queued, its bytes
      // uncounted until the coroutine resumes, and the execve would lose
      // them; it then waits below for readability instead. One begun
      // before is stopped by StopFirstRead(), and the upgrade waits for
      // its completion (HttpServer::FirstReadsSettled()).
      first_read_in_flight_ = true;
      auto [first_ec, n] = co_await socket_.async_read_some(asio::buffer(first_read_), kUseNothrow);
      first_read_in_flight_ = false;
      if (first_ec == asio::error::operation_aborted && first_read_stopped_ && !timed_out_ &&
          !closed_) {
        first_read_stopped_ = false;
        continue;  // an upgrade stopped it: wait for readability below
      }
      first_read_stopped_ = false;
      if (first_ec) co_return false;  // closed, idle timeout, or shutdown
      buf_.reset(new char[kReadBufferBytes]);
      buf_size_ = kReadBufferBytes;
      std::memcpy(buf_.get(), first_read_.data(), n);
      begin_ = 0;
      end_ = n;
      continue;
    }
    // Read by hand, never by an asynchronous read: bytes Asio read ahead
    // sit in the buffer uncounted until the coroutine resumes, and an
    // upgrade in place between the two would lose them.
    if (buf_) {
      if (end_ == buf_size_) {  // a head outgrowing the buffer: bounded far below it
        co_return Status::Error(ErrorCode::kHeadersTooLarge,
                                "request head does not fit the buffer");
      }
      ssize_t n =
          ::recv(socket_.native_handle(), buf_.get() + end_, buf_size_ - end_, MSG_DONTWAIT);
      if (n > 0) {
        end_ += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) co_return false;  // closed, reset
    }
    // Until bytes arrive (an idle connection holds no read buffer till then).
    auto [ec] = co_await socket_.async_wait(Socket::wait_read, kUseNothrow);
    if (ec) {
      if (timed_out_ && started) {
        co_return Status::Error(ErrorCode::kRequestTimeout,
                                "request headers not received within " +
                                    std::to_string(limits_.header_timeout.count()) + " ms")
            .With("timeout_ms", static_cast<int64_t>(limits_.header_timeout.count()));
      }
      co_return false;  // idle timeout, or shutdown
    }
    if (!buf_) {
      buf_.reset(new char[kReadBufferBytes]);
      buf_size_ = kReadBufferBytes;
    }
  }
}

asio::awaitable<Result<std::string_view>> Connection::NextBodyChunk() {
  for (;;) {
    if (!body_queue_.empty()) {
      std::string_view span = body_queue_.front();
      body_queue_.pop_front();
      co_return span;
    }
    if (message_complete_) co_return std::string_view();
    if (broken_) co_return Status::Error(ErrorCode::kTransport, "request body unavailable");
    const std::string* expect = parser_.head().Header("expect");
    if (expect && !continue_sent_ && strcasecmp(expect->c_str(), "100-continue") == 0) {
      continue_sent_ = true;
      AGENTD_CO_RETURN_IF_ERROR(co_await WriteAll(asio::buffer(kContinue)));
    }
    Compact();
    if (begin_ < end_) {
      AGENTD_CO_RETURN_IF_ERROR(Feed());
      if (!body_queue_.empty() || message_complete_) continue;
    }
    // The read may wait for what is left of the window: a trickle that
    // never fills the window's byte quota is cut like a stall.
    auto waiting_since = Clock::now();
    Arm(std::chrono::duration_cast<std::chrono::milliseconds>(limits_.io_timeout -
                                                              body_window_waited_));
    auto [ec, n] = co_await socket_.async_read_some(
        asio::buffer(buf_.get() + end_, buf_size_ - end_), kUseNothrow);
    Disarm();
    if (ec) co_return LostConnection(ec, "reading the request body");
    end_ += n;
    body_window_waited_ += Clock::now() - waiting_since;
    body_window_bytes_ += n;
    if (body_window_bytes_ >= limits_.min_body_bytes_per_window) {
      body_window_waited_ = {};
      body_window_bytes_ = 0;
    }
    AGENTD_CO_RETURN_IF_ERROR(Feed());
  }
}

asio::awaitable<Result<size_t>> Connection::ReadBodyInto(char* dst, size_t cap) {
  if (cap == 0) co_return size_t{0};
  for (;;) {
    if (!body_queue_.empty()) {
      std::string_view& span = body_queue_.front();
      size_t n = std::min(cap, span.size());
      std::memcpy(dst, span.data(), n);
      span.remove_prefix(n);
      if (span.empty()) body_queue_.pop_front();
      co_return n;
    }
    if (message_complete_) co_return size_t{0};
    if (broken_) co_return Status::Error(ErrorCode::kTransport, "request body unavailable");
    std::optional<uint64_t> left = parser_.BodyLeft();
    if (!left || begin_ < end_) {
      // A chunked body, or bytes already in the buffer: its next span.
      Result<std::string_view> chunk = co_await NextBodyChunk();
      if (!chunk.ok()) co_return chunk.status();
      if (chunk->empty()) co_return size_t{0};
      body_queue_.push_front(*chunk);  // still in the buffer: taken above
      continue;
    }
    const std::string* expect = parser_.head().Header("expect");
    if (expect && !continue_sent_ && strcasecmp(expect->c_str(), "100-continue") == 0) {
      continue_sent_ = true;
      AGENTD_CO_RETURN_IF_ERROR(co_await WriteAll(asio::buffer(kContinue)));
    }
    // The buffer is empty: the socket's bytes go straight to `dst`, never
    // past the body's end (what follows is the next request's).
    size_t want = static_cast<size_t>(std::min<uint64_t>(cap, *left));
    ssize_t n = ::recv(socket_.native_handle(), dst, want, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // The wait may take what is left of the window: a trickle that never
      // fills the window's byte quota is cut like a stall.
      auto waiting_since = Clock::now();
      Arm(std::chrono::duration_cast<std::chrono::milliseconds>(limits_.io_timeout -
                                                                body_window_waited_));
      auto [ec] = co_await socket_.async_wait(Socket::wait_read, kUseNothrow);
      Disarm();
      body_window_waited_ += Clock::now() - waiting_since;
      if (ec) co_return LostConnection(ec, "reading the request body");
      continue;
    }
    if (n <= 0) {
      asio::error_code ec = n == 0 ? asio::error_code(asio::error::eof)
                                   : asio::error_code(errno, asio::system_category());
      co_return LostConnection(ec, "reading the request body");
    }
    size_t got = static_cast<size_t>(n);
    body_window_bytes_ += got;
    if (body_window_bytes_ >= limits_.min_body_bytes_per_window) {
      body_window_waited_ = {};
      body_window_bytes_ = 0;
    }
    // The parser still counts the body (its end, and the next message).
    Result<RequestParser::Progress> progress = parser_.Feed(std::string_view(dst, got));
    if (!progress.ok()) {
      broken_ = true;
      co_return progress.status();
    }
    size_t body = 0;
    for (std::string_view span : progress->body) body += span.size();
    if (progress->consumed != got || body != got) {
      broken_ = true;
      co_return Status::Internal("the parser did not take a Content-Length body whole");
    }
    if (progress->message_complete) message_complete_ = true;
    co_return got;
  }
}

asio::awaitable<bool> Connection::DrainBody() {
  if (message_complete_) co_return true;
  const std::string* expect = parser_.head().Header("expect");
  if (expect && !continue_sent_) co_return false;  // the client waits; it never sends the body
  size_t drained = 0;
  while (!message_complete_) {
    Result<std::string_view> chunk = co_await NextBodyChunk();
    if (!chunk.ok()) co_return false;
    drained += chunk->size();
    if (drained > limits_.max_drain_bytes) co_return false;
  }
  co_return true;
}

asio::awaitable<bool> Connection::Serve() {
  auto started_at = Clock::now();
  in_request_ = true;
  RequestHead& head = parser_.head();
  Response res(*this, head.method == "HEAD");
  if (close_after_request_) res.CloseAfter();  // say so: the client must not reuse it
  std::string route;
  Result<ParsedTarget> target = ParseTarget(head.target);
  if (!target.ok()) {
    res.CloseAfter();
    co_await res.SendError(target.status());
  } else {
    Request req(*this, head, std::move(*target));
    try {
      co_await handler_(req, res);
    } catch (const std::exception& e) {
      Log(LogLevel::kError, "handler failed", json::Object().Set("error", e.what()));
    }
    route = req.route_pattern().empty() ? req.path() : req.route_pattern();
    if (!res.started()) {
      // (Named first: GCC 12 mishandles temporaries inside co_await.)
      Status answer =
          body_timeout_ ? *body_timeout_ : Status::Internal("the request could not be answered");
      co_await res.SendError(answer);
    } else if (!res.finished()) {
      res.CloseAfter();  // a stream cut short: the client must see the connection end
    }
  }
  LogLevel line_level = res.routine() && res.status() < 300 ? LogLevel::kDebug : LogLevel::kInfo;
  if (LogEnabled(line_level)) {
    auto ms = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started_at);
    Log(line_level, "request",
        json::Object()
            .Set("conn", id_)
            .Set("method", head.method)
            .Set("route", route)
            .Set("status", res.status())
            .Set("bytes", res.body_bytes())
            .Set("duration_ms", static_cast<double>(ms.count()) / 1000.0));
  }
  in_request_ = false;
  bool keep = !broken_ && !closed_ && !close_after_request_ && !res.close_after() &&
              head.keep_alive && !head.upgrade;
  if (keep) keep = co_await DrainBody();
  if (!keep) co_return false;
  body_queue_.clear();
  head_ready_ = false;
  message_complete_ = false;
  continue_sent_ = false;
  body_window_waited_ = {};
  body_window_bytes_ = 0;
  body_timeout_.reset();
  parser_.NextMessage();
  if (begin_ == end_) {  // idle until the next request
    buf_.reset();
    buf_size_ = 0;
  }
  co_return true;
}

asio::awaitable<void> Connection::SendEarlyError(const Status& error) {
  Response res(*this, false);
  res.CloseAfter();
  Log(LogLevel::kInfo, "request refused",
      json::Object().Set("conn", id_).Set("code", std::string(error.code_name())));
  if (error.code() == ErrorCode::kTransport) co_return;
  co_await res.SendError(error);
}

asio::awaitable<Status> Connection::WriteAll(std::vector<asio::const_buffer> buffers) {
  if (closed_) co_return Status::Error(ErrorCode::kTransport, "connection closed");
  Arm(broken_ ? kEarlyErrorTimeout : limits_.io_timeout);
  auto [ec, n] = co_await asio::async_write(socket_, buffers, kUseNothrow);
  Disarm();
  if (ec) co_return LostConnection(ec, "writing the response");
  co_return Status::Ok();
}

asio::awaitable<Status> Connection::WriteAll(asio::const_buffer buffer) {
  std::vector<asio::const_buffer> buffers(1, buffer);
  co_return co_await WriteAll(std::move(buffers));
}

std::string Connection::TakeOver() {
  std::string rest(buf_.get() + begin_, end_ - begin_);
  begin_ = end_ = 0;
  body_queue_.clear();
  broken_ = true;  // never parsed as HTTP again
  taken_over_ = true;
  return rest;
}

template <typename Move>
asio::awaitable<Status> Connection::SendPrefixed(std::string_view prefix, uint64_t length,
                                                 Move move) {
  // The prefix (a chunk's framing) goes out with MSG_MORE: the kernel
  // holds it for the body's pages, so it shares their segment instead of
  // making a tiny one of its own (a segment, an ack and a wake-up of the
  // reader each).
  while (!prefix.empty()) {
    if (closed_) co_return Status::Error(ErrorCode::kTransport, "connection closed");
    int flags = MSG_NOSIGNAL | MSG_DONTWAIT | (length > 0 ? MSG_MORE : 0);
    ssize_t n = ::send(socket_.native_handle(), prefix.data(), prefix.size(), flags);
    if (n > 0) {
      prefix.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (Status room = co_await AwaitRoom(n < 0 ? errno : EAGAIN); !room.ok()) co_return room;
  }
  uint64_t left = length;
  while (left > 0) {
    if (closed_) co_return Status::Error(ErrorCode::kTransport, "connection closed");
    ssize_t n = move(std::min<uint64_t>(left, 1 << 30));
    if (n > 0) {
      left -= static_cast<uint64_t>(n);
      continue;
    }
    if (n == 0) {
      co_return Status::Error(ErrorCode::kIoError, "source ended before the expected length")
          .With("missing_bytes", left);
    }
    if (errno == EINTR) continue;
    if (Status room = co_await AwaitRoom(errno); !room.ok()) co_return room;
  }
  co_return Status::Ok();
}

asio::awaitable<Status> Connection::SendFile(std::string_view prefix, int fd, uint64_t offset,
                                             uint64_t length) {
  off_t off = static_cast<off_t>(offset);
  int sock = socket_.native_handle();
  co_return co_await SendPrefixed(prefix, length, [sock, fd, &off](uint64_t n) {
    return ::sendfile(sock, fd, &off, static_cast<size_t>(n));
  });
}

asio::awaitable<Status> Connection::SendPipe(std::string_view prefix, int pipe_fd,
                                             uint64_t length) {
  int sock = socket_.native_handle();
  co_return co_await SendPrefixed(prefix, length, [sock, pipe_fd](uint64_t n) {
    return ::splice(pipe_fd, nullptr, sock, nullptr, static_cast<size_t>(n),
                    SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
  });
}

asio::awaitable<Status> Connection::AwaitRoom(int send_errno) {
  if (send_errno != EAGAIN) {
    broken_ = true;
    co_return Status::Error(
        ErrorCode::kTransport,
        std::string("connection lost writing the response: ") + std::strerror(send_errno));
  }
  Arm(limits_.io_timeout);
  auto [ec] = co_await socket_.async_wait(Socket::wait_write, kUseNothrow);
  Disarm();
  if (ec) co_return LostConnection(ec, "writing the response");
  co_return Status::Ok();
}

}  // namespace agentd
