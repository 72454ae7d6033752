#include "http_connection.h"

#include <linux/vm_sockets.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <fcntl.h>
#include <unistd.h>

#include <asio/experimental/awaitable_operators.hpp>
#include <cstring>

#include "agentd/client/nothrow.h"
#include "agentd/trees/unique_fd.h"

namespace agentd::client {
namespace {

using namespace asio::experimental::awaitable_operators;
constexpr size_t kBufferBytes = 256 * 1024;  // a download moves in reads this size
// The private pipe a download into a descriptor splices through (the
// default 64 KiB when the kernel refuses this size).
constexpr int kSplicePipeBytes = 1 << 20;

Status Timeout(std::string_view during) {
  return Status::Error(ErrorCode::kDeadlineExceeded,
                       "deadline passed while " + std::string(during));
}

Status Lost(const asio::error_code& ec, std::string_view during) {
  return Status::Error(ErrorCode::kTransport, "connection to the daemon failed while " +
                                                  std::string(during) + ": " + ec.message());
}

Status MidResponse() {
  return Status::Error(ErrorCode::kTransport, "the daemon closed the connection mid-response");
}

Status WriteFailed(int err) {
  return Status::Error(ErrorCode::kIoError,
                       std::string("cannot write the downloaded bytes: ") + std::strerror(err))
      .With("errno", static_cast<int64_t>(err));
}

// Waits until `fd` (a non-blocking pipe or socket that was full) takes more.
void AwaitWritable(int fd) {
  pollfd p{fd, POLLOUT, 0};
  ::poll(&p, 1, -1);
}

// All of `bytes` into `fd`.
Status WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      AwaitWritable(fd);
    } else {
      return WriteFailed(n < 0 ? errno : EIO);
    }
  }
  return Status::Ok();
}

// splice(2) cannot be used between these two descriptors.
bool SpliceRefused(int err) { return err == EINVAL || err == ENOSYS || err == EOPNOTSUPP; }

}  // namespace

HttpConnection::HttpConnection(asio::any_io_executor executor)
    : socket_(executor), timer_(executor), buf_(kBufferBytes) {}

asio::awaitable<Status> HttpConnection::Connect(const Endpoint& endpoint, Deadline deadline) {
  using Proto = asio::generic::stream_protocol;
  std::vector<Proto::endpoint> candidates;
  switch (endpoint.kind) {
    case Endpoint::Kind::kTcp: {
      asio::ip::tcp::resolver resolver(socket_.get_executor());
      timer_.expires_at(deadline);
      auto r = co_await (
          resolver.async_resolve(endpoint.host, std::to_string(endpoint.port), kNothrow) ||
          timer_.async_wait(kNothrow));
      if (r.index() == 1) co_return Timeout("resolving " + endpoint.host);
      auto [ec, results] = std::get<0>(r);
      if (ec) co_return Lost(ec, "resolving " + endpoint.host);
      for (const auto& entry : results) candidates.emplace_back(entry.endpoint());
      break;
    }
    case Endpoint::Kind::kUnix: {
      sockaddr_un sa{};
      sa.sun_family = AF_UNIX;
      std::memcpy(sa.sun_path, endpoint.path.data(), endpoint.path.size());
      candidates.emplace_back(&sa, offsetof(sockaddr_un, sun_path) + endpoint.path.size() + 1, 0);
      break;
    }
    case Endpoint::Kind::kVsock: {
      sockaddr_vm sa{};
      sa.svm_family = AF_VSOCK;
      sa.svm_cid = endpoint.cid;
      sa.svm_port = endpoint.vsock_port;
      candidates.emplace_back(&sa, sizeof(sa), 0);
      break;
    }
  }
  asio::error_code last;
  for (const Proto::endpoint& candidate : candidates) {
    asio::error_code ec;
    socket_.close(ec);
    socket_.open(candidate.protocol(), ec);
    if (ec) {
      last = ec;
      continue;
    }
    timer_.expires_at(deadline);
    auto r = co_await (socket_.async_connect(candidate, kNothrow) || timer_.async_wait(kNothrow));
    if (r.index() == 1) co_return Timeout("connecting to " + endpoint.url);
    auto [cec] = std::get<0>(r);
    if (!cec) {
      asio::error_code nb;
      socket_.non_blocking(true, nb);  // ReadSome's first read never waits
      if (nb) co_return Lost(nb, "connecting to " + endpoint.url);
      if (endpoint.kind == Endpoint::Kind::kTcp) {
        int one = 1;
        ::setsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      }
      open_ = true;
      co_return Status::Ok();
    }
    last = cec;
  }
  co_return Lost(last, "connecting to " + endpoint.url);
}

asio::awaitable<Status> HttpConnection::Write(std::vector<asio::const_buffer> buffers,
                                              Deadline deadline) {
  // As much as the socket takes now goes at once (a request usually fits
  // whole); the deadline's timer is armed only for what has to wait.
  asio::error_code now_ec;
  size_t sent = socket_.write_some(buffers, now_ec);
  if (now_ec && now_ec != asio::error::would_block && now_ec != asio::error::try_again) {
    Close();
    co_return Lost(now_ec, "sending the request");
  }
  size_t total = asio::buffer_size(buffers);
  if (!now_ec && sent == total) co_return Status::Ok();
  if (now_ec) sent = 0;
  // Drop what went out already.
  std::vector<asio::const_buffer> rest;
  for (asio::const_buffer b : buffers) {
    if (sent >= b.size()) {
      sent -= b.size();
      continue;
    }
    rest.push_back(b + sent);
    sent = 0;
  }
  buffers = std::move(rest);
  timer_.expires_at(deadline);
  auto r = co_await (asio::async_write(socket_, buffers, kNothrow) || timer_.async_wait(kNothrow));
  if (r.index() == 1) {
    Close();
    co_return Timeout("sending the request");
  }
  auto [ec, n] = std::get<0>(r);
  if (ec) {
    Close();
    co_return Lost(ec, "sending the request");
  }
  co_return Status::Ok();
}

asio::awaitable<Status> HttpConnection::Write(std::string_view bytes, Deadline deadline) {
  std::vector<asio::const_buffer> buffers(1, asio::buffer(bytes));
  co_return co_await Write(std::move(buffers), deadline);
}

namespace {

// sendfile(2) has no MSG_NOSIGNAL: a daemon that closed the connection
// would kill the calling process with SIGPIPE. The signal is blocked on
// this thread for the call, and one it raised is taken back (not one that
// was pending before).
ssize_t SendFileNoSignal(int socket, int fd, off_t* offset, size_t count) {
  sigset_t pipe_only, old, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigpending(&pending);
  bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  ssize_t n = ::sendfile(socket, fd, offset, count);
  int err = errno;
  if (n < 0 && err == EPIPE && !was_pending) {
    timespec zero{};
    while (sigtimedwait(&pipe_only, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = err;
  return n;
}

}  // namespace

asio::awaitable<Status> HttpConnection::SendFile(int fd, uint64_t length, Deadline deadline) {
  off_t offset = 0;
  while (static_cast<uint64_t>(offset) < length) {
    // One call moves at most 2 GiB less a page (Linux); ask for 1 GiB.
    size_t step = static_cast<size_t>(std::min<uint64_t>(length - offset, 1ull << 30));
    ssize_t n = SendFileNoSignal(socket_.native_handle(), fd, &offset, step);
    if (n > 0) continue;
    if (n == 0) {
      Close();
      co_return Status::Error(ErrorCode::kIoError, "the file ended after " +
                                                       std::to_string(offset) + " of the " +
                                                       std::to_string(length) + " bytes declared")
          .With("sent", static_cast<uint64_t>(offset))
          .With("length", length);
    }
    if (errno == EINTR) continue;
    if (errno == EIO || errno == EINVAL || errno == ENOSYS || errno == EOVERFLOW) {
      // The local file's fault (unreadable, or not one sendfile can read):
      // io_error, which is not retried.
      int err = errno;
      Close();
      co_return Status::Error(ErrorCode::kIoError,
                              std::string("cannot send the file: ") + std::strerror(err))
          .With("sent", static_cast<uint64_t>(offset))
          .With("errno", static_cast<int64_t>(err));
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      asio::error_code ec(errno, asio::system_category());
      Close();
      co_return Lost(ec, "sending the request");
    }
    // The socket is full: wait until it takes more, within the deadline.
    timer_.expires_at(deadline);
    auto r = co_await (socket_.async_wait(asio::socket_base::wait_write, kNothrow) ||
                       timer_.async_wait(kNothrow));
    if (r.index() == 1) {
      Close();
      co_return Timeout("sending the request");
    }
    auto [ec] = std::get<0>(r);
    if (ec) {
      Close();
      co_return Lost(ec, "sending the request");
    }
  }
  co_return Status::Ok();
}

void HttpConnection::CompactBuffer() {
  if (begin_ == end_) {
    begin_ = end_ = 0;
  } else if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
}

asio::awaitable<Result<size_t>> HttpConnection::ReadSome(Deadline deadline, bool keep_on_timeout) {
  if (blocking_wait_) {
    // Waiting for an answer just asked for: poll(2) first, then one read
    // (nothing is there yet, so a read first would only fail).
    co_return ReadSomeBlocking(deadline, keep_on_timeout, /*poll_first=*/!head_done_);
  }
  CompactBuffer();
  // What the socket already holds is taken at once; the deadline's timer
  // is armed only for a read that has to wait. (Arming and cancelling a
  // timer around every read cost more than the read on a fast download.)
  asio::error_code now_ec;
  size_t now_n = socket_.read_some(asio::buffer(buf_.data() + end_, buf_.size() - end_), now_ec);
  if (!now_ec) {
    end_ += now_n;
    co_return now_n;
  }
  if (now_ec == asio::error::eof) co_return size_t{0};
  if (now_ec != asio::error::would_block && now_ec != asio::error::try_again) {
    Close();
    co_return Lost(now_ec, "reading the answer");
  }
  for (;;) {
    // Wait for readiness, then read: asio's async_read_some would first try
    // the read that just failed once more. The deadline is a plain timer
    // handler that cancels the wait, not a parallel group (two coroutine
    // frames and a cancellation slot per wait, more than the read costs).
    bool timed_out = false;
    asio::error_code ec = co_await WaitReadable(deadline, &timed_out);
    if (timed_out) {
      if (!keep_on_timeout) Close();
      co_return Timeout("waiting for the daemon's answer");
    }
    if (ec) {
      Close();
      co_return Lost(ec, "reading the answer");
    }
    size_t n = socket_.read_some(asio::buffer(buf_.data() + end_, buf_.size() - end_), ec);
    if (!ec) {
      end_ += n;
      co_return n;
    }
    if (ec == asio::error::eof) co_return size_t{0};
    if (ec != asio::error::would_block && ec != asio::error::try_again) {
      Close();
      co_return Lost(ec, "reading the answer");
    }
    // A readiness that another read took: wait again.
  }
}

asio::awaitable<asio::error_code> HttpConnection::WaitReadable(Deadline deadline, bool* timed_out) {
  uint64_t wait = ++wait_number_;
  timer_.expires_at(deadline);
  timer_.async_wait([this, wait, alive = std::weak_ptr<char>(alive_)](const asio::error_code& ec) {
    // A cancelled timer, a connection gone, or a wait that already ended
    // (the timer fired as the socket became readable): nothing to cancel.
    if (ec || alive.expired() || wait != wait_number_) return;
    deadline_passed_ = true;
    asio::error_code ignored;
    socket_.cancel(ignored);
  });
  deadline_passed_ = false;
  auto [ec] = co_await socket_.async_wait(asio::socket_base::wait_read, kNothrow);
  ++wait_number_;  // a timer handler still queued now finds another number
  timer_.cancel();
  *timed_out = deadline_passed_;
  co_return ec;
}

Status HttpConnection::FeedParser() {
  Result<ResponseParser::Progress> p =
      parser_.Feed(std::string_view(buf_.data() + begin_, end_ - begin_));
  if (!p.ok()) {
    Close();
    return p.status();
  }
  begin_ += p->consumed;
  for (std::string_view span : p->body) body_.push_back(span);
  if (p->head_complete) head_done_ = true;
  if (p->message_complete) message_done_ = true;
  if (p->upgraded) upgraded_ = true;
  return Status::Ok();
}

asio::awaitable<Result<ResponseHead>> HttpConnection::ReadHead(bool head_request, Deadline deadline,
                                                               bool keep_on_timeout) {
  parser_.Reset(head_request);
  body_.clear();
  body_next_ = 0;
  body_seen_ = 0;
  head_done_ = message_done_ = upgraded_ = false;
  while (!head_done_) {
    if (begin_ < end_) {
      Status s = FeedParser();
      if (!s.ok()) co_return s;
      if (head_done_) break;
    }
    Result<size_t> n = co_await ReadSome(deadline, keep_on_timeout);
    if (!n.ok()) co_return n.status();
    if (*n == 0) {
      Close();
      co_return Status::Error(ErrorCode::kTransport,
                              "the daemon closed the connection before answering");
    }
  }
  keep_alive_ = parser_.head().keep_alive;
  co_return parser_.head();
}

std::optional<Result<std::string_view>> HttpConnection::NextBuffered() {
  for (;;) {
    if (body_next_ < body_.size()) {
      body_seen_ += body_[body_next_].size();
      return body_[body_next_++];
    }
    body_.clear();
    body_next_ = 0;
    if (message_done_) return std::string_view();
    if (begin_ == end_) return std::nullopt;
    Status s = FeedParser();
    if (!s.ok()) return s;
    if (body_.empty() && !message_done_) return std::nullopt;
  }
}

Status HttpConnection::AfterRead(size_t got) {
  if (got > 0) return FeedParser();
  Result<ResponseParser::Progress> fin = parser_.Finish();
  keep_alive_ = false;
  if (!fin.ok() || (!fin->message_complete && !message_done_)) {
    Close();
    return MidResponse();
  }
  message_done_ = true;
  return Status::Ok();
}

asio::awaitable<Result<std::string_view>> HttpConnection::ReadBody(Deadline deadline) {
  for (;;) {
    if (std::optional<Result<std::string_view>> next = NextBuffered()) co_return std::move(*next);
    Result<size_t> n = co_await ReadSome(deadline);
    if (!n.ok()) co_return n.status();
    Status s = AfterRead(*n);
    if (!s.ok()) co_return s;
  }
}

Result<std::string_view> HttpConnection::ReadBodyBlocking(Deadline deadline) {
  for (;;) {
    if (std::optional<Result<std::string_view>> next = NextBuffered()) return std::move(*next);
    Result<size_t> n = ReadSomeBlocking(deadline, /*keep_on_timeout=*/false, /*poll_first=*/false);
    if (!n.ok()) return n.status();
    Status s = AfterRead(*n);
    if (!s.ok()) return s;
  }
}

Result<size_t> HttpConnection::ReadSomeBlocking(Deadline deadline, bool keep_on_timeout,
                                                bool poll_first) {
  CompactBuffer();
  int fd = socket_.native_handle();  // non-blocking: poll(2) does the waiting
  for (bool read_now = !poll_first;; read_now = true) {
    if (read_now) {
      ssize_t n = ::recv(fd, buf_.data() + end_, buf_.size() - end_, 0);
      if (n >= 0) {
        end_ += static_cast<size_t>(n);
        return static_cast<size_t>(n);
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        asio::error_code ec(errno, asio::system_category());
        Close();
        return Lost(ec, "reading the answer");
      }
    }
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      if (!keep_on_timeout) Close();
      return Timeout("waiting for the daemon's answer");
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30))) < 0 && errno != EINTR) {
      asio::error_code ec(errno, asio::system_category());
      Close();
      return Lost(ec, "waiting for the daemon's answer");
    }
  }
}

asio::awaitable<Result<uint64_t>> HttpConnection::ReadBodyToFd(
    int fd, std::chrono::milliseconds wait, const std::function<void(uint64_t)>& progress) {
  uint64_t total = 0;
  auto put = [&](std::string_view bytes) {
    Status s = WriteAll(fd, bytes);
    if (!s.ok()) {
      Close();
      return s;
    }
    total += bytes.size();
    if (progress) progress(bytes.size());
    return Status::Ok();
  };
  // What came with the head (or after it) is in the buffer: it goes first.
  for (;;) {
    std::optional<Result<std::string_view>> next = NextBuffered();
    if (!next) break;
    if (!next->ok()) co_return next->status();
    if ((*next)->empty()) co_return total;
    Status s = put(**next);
    if (!s.ok()) co_return s;
  }
  // The buffer is empty and the body not: a Content-Length body's rest is
  // read past the parser (the next ReadHead starts it afresh); a chunked
  // one goes through it.
  std::optional<uint64_t> length = parser_.head().content_length;
  if (length && begin_ == end_ && *length > body_seen_) {
    Status s = co_await MoveBodyToFd(fd, *length - body_seen_, wait, progress, &total);
    if (!s.ok()) co_return s;
    message_done_ = true;
    co_return total;
  }
  for (;;) {
    Result<std::string_view> chunk = co_await ReadBody(Clock::now() + wait);
    if (!chunk.ok()) co_return chunk.status();
    if (chunk->empty()) co_return total;
    Status s = put(*chunk);
    if (!s.ok()) co_return s;
  }
}

asio::awaitable<Status> HttpConnection::MoveBodyToFd(int fd, uint64_t left,
                                                     std::chrono::milliseconds wait,
                                                     const std::function<void(uint64_t)>& progress,
                                                     uint64_t* total) {
  int sock = socket_.native_handle();
  auto moved = [&](size_t n) {
    left -= n;
    *total += n;
    if (progress) progress(n);
  };
  int ends[2];
  bool splicing = ::pipe2(ends, O_CLOEXEC) == 0;
  UniqueFd pipe_read(splicing ? ends[0] : -1), pipe_write(splicing ? ends[1] : -1);
  size_t capacity = 64 * 1024;
  if (splicing) {
    ::fcntl(pipe_write.get(), F_SETPIPE_SZ, kSplicePipeBytes);
    int got = ::fcntl(pipe_write.get(), F_GETPIPE_SZ);
    if (got > 0) capacity = static_cast<size_t>(got);
  }
  while (splicing && left > 0) {
    ssize_t n = ::splice(sock, nullptr, pipe_write.get(), nullptr,
                         std::min<uint64_t>(left, capacity), SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n <= 0) {
      int err = n < 0 ? errno : 0;
      if (n < 0 && SpliceRefused(err)) break;  // this socket cannot be spliced from; nothing moved
      Status more = co_await AwaitMoreBody(n, err, wait);
      if (!more.ok()) co_return more;
      continue;
    }
    // `n` bytes in the pipe: on into `fd`.
    size_t in_pipe = static_cast<size_t>(n);
    while (in_pipe > 0) {
      ssize_t w = ::splice(pipe_read.get(), nullptr, fd, nullptr, in_pipe, SPLICE_F_MOVE);
      int err = w < 0 ? errno : EIO;
      if (w > 0) {
        in_pipe -= static_cast<size_t>(w);
        moved(static_cast<size_t>(w));
      } else if (w < 0 && err == EINTR) {
        continue;
      } else if (w < 0 && (err == EAGAIN || err == EWOULDBLOCK)) {
        AwaitWritable(fd);
      } else if (w < 0 && SpliceRefused(err)) {
        // `fd` cannot be spliced to: what the pipe holds goes out through
        // the buffer, then the rest by the copy below.
        splicing = false;
        while (in_pipe > 0) {
          ssize_t r = ::read(pipe_read.get(), buf_.data(), std::min(buf_.size(), in_pipe));
          if (r < 0 && errno == EINTR) continue;
          Status s = r > 0 ? WriteAll(fd, std::string_view(buf_.data(), static_cast<size_t>(r)))
                           : WriteFailed(r < 0 ? errno : EIO);
          if (!s.ok()) {
            Close();
            co_return s;
          }
          in_pipe -= static_cast<size_t>(r);
          moved(static_cast<size_t>(r));
        }
      } else {
        Close();
        co_return WriteFailed(err);
      }
    }
  }
  // The copy path: recv into the buffer, write(2) out.
  begin_ = end_ = 0;
  while (left > 0) {
    ssize_t n = ::recv(sock, buf_.data(), std::min<uint64_t>(left, buf_.size()), 0);
    if (n > 0) {
      Status s = WriteAll(fd, std::string_view(buf_.data(), static_cast<size_t>(n)));
      if (!s.ok()) {
        Close();
        co_return s;
      }
      moved(static_cast<size_t>(n));
      continue;
    }
    Status more = co_await AwaitMoreBody(n, n < 0 ? errno : 0, wait);
    if (!more.ok()) co_return more;
  }
  co_return Status::Ok();
}

asio::awaitable<Status> HttpConnection::AwaitMoreBody(ssize_t n, int err,
                                                      std::chrono::milliseconds wait) {
  if (n == 0) {
    Close();
    co_return MidResponse();
  }
  if (err == EINTR) co_return Status::Ok();
  if (err != EAGAIN && err != EWOULDBLOCK) {
    Close();
    co_return Lost(asio::error_code(err, asio::system_category()), "reading the answer");
  }
  bool timed_out = false;
  asio::error_code ec = co_await WaitReadable(Clock::now() + wait, &timed_out);
  if (timed_out) {
    Close();
    co_return Timeout("waiting for the daemon's answer");
  }
  if (ec) {
    Close();
    co_return Lost(ec, "reading the answer");
  }
  co_return Status::Ok();
}

asio::awaitable<Result<std::string>> HttpConnection::ReadBodyAll(size_t limit, Deadline deadline) {
  std::string out;
  for (;;) {
    Result<std::string_view> chunk = co_await ReadBody(deadline);
    if (!chunk.ok()) co_return chunk.status();
    if (chunk->empty()) co_return out;
    if (out.size() + chunk->size() > limit) {
      Close();
      co_return Status::Error(ErrorCode::kProtocolError,
                              "the daemon's answer exceeds " + std::to_string(limit) + " bytes")
          .With("limit", limit);
    }
    out.append(*chunk);
  }
}

std::string HttpConnection::TakeUpgradeBytes() {
  std::string rest(buf_.data() + begin_, end_ - begin_);
  begin_ = end_ = 0;
  return rest;
}

bool HttpConnection::PeerClosed() {
  if (!open_) return true;
  char c;
  ssize_t n = ::recv(socket_.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
  return true;  // unsolicited bytes: the connection is out of step
}

void HttpConnection::Close() {
  open_ = false;
  asio::error_code ec;
  socket_.close(ec);
}

}  // namespace agentd::client
