#include "server/exact_io.h"

#include <sys/socket.h>

#include <cerrno>
#include <memory>

#include "sys/awaitable.h"

namespace agentd {
namespace {

// Waits until `sock` is ready for `what`; with a nonzero `limit`, fails
// with timed_out after it. (A timer that cancels the wait, rather than
// Asio's awaitable operators, whose code is large: the binary has a size
// budget.)
asio::awaitable<asio::error_code> WaitReady(Socket& sock, Socket::wait_type what,
                                            std::chrono::milliseconds limit) {
  if (limit.count() == 0) {
    auto [ec] = co_await sock.async_wait(what, kUseNothrow);
    co_return ec;
  }
  // The timer's handler may run after this frame is gone (queued as the
  // wait completed): it touches only what it shares, and the socket only
  // while the wait is still pending.
  struct Shared {
    Socket* sock;
    bool done = false;
    bool expired = false;
  };
  auto shared = std::make_shared<Shared>(Shared{&sock});
  asio::steady_timer timer(sock.get_executor(), limit);
  timer.async_wait([shared](const asio::error_code& ec) {
    if (ec || shared->done) return;
    shared->expired = true;
    asio::error_code ignored;
    shared->sock->cancel(ignored);
  });
  auto [ec] = co_await sock.async_wait(what, kUseNothrow);
  shared->done = true;
  timer.cancel();
  if (shared->expired) co_return asio::error::timed_out;
  co_return ec;
}

}  // namespace

asio::awaitable<asio::error_code> FlushExact(Socket& sock, std::string& pending,
                                             std::chrono::milliseconds limit) {
  while (!pending.empty()) {
    ssize_t n =
        ::send(sock.native_handle(), pending.data(), pending.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      pending.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      asio::error_code ec = co_await WaitReady(sock, Socket::wait_write, limit);
      if (ec) co_return ec;
      continue;
    }
    co_return asio::error_code(n < 0 ? errno : EPIPE, asio::system_category());
  }
  co_return asio::error_code();
}

asio::awaitable<std::pair<asio::error_code, size_t>> ReadExact(Socket& sock, std::string& into,
                                                               size_t max) {
  for (;;) {
    size_t old = into.size();
    into.resize(old + max);
    ssize_t n = ::recv(sock.native_handle(), into.data() + old, max, MSG_DONTWAIT);
    into.resize(old + (n > 0 ? static_cast<size_t>(n) : 0));
    if (n >= 0) co_return std::pair(asio::error_code(), static_cast<size_t>(n));
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      co_return std::pair(asio::error_code(errno, asio::system_category()), size_t{0});
    }
    asio::error_code ec = co_await WaitReady(sock, Socket::wait_read, {});
    if (ec) co_return std::pair(ec, size_t{0});
  }
}

}  // namespace agentd
