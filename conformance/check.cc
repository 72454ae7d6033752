#include "check.h"

#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <atomic>

#include "suite.h"

namespace agentd::conformance {

void Expect(bool condition, std::string reason) {
  if (!condition) throw CheckFailure{std::move(reason)};
}

ExecStartRequest Sh(std::string command, std::string user) {
  ExecStartRequest r;
  r.command = std::move(command);
  if (!user.empty()) r.user = std::move(user);
  return r;
}

void ExpectOk(const Status& s, std::string_view what) {
  if (!s.ok()) throw CheckFailure{std::string(what) + " failed: " + s.ToString()};
}

std::unique_ptr<client::Client> CheckContext::NewClient() const {
  return std::make_unique<client::Client>(client_.options());
}

std::string CheckContext::Scratch(std::string_view name) {
  if (!scratch_made_) {
    MkdirRequest mk;
    mk.path = scratch_dir_;
    mk.parents = true;
    mk.mode = 0777;
    ExpectOk(client_.MakeDir(mk), "creating the check's scratch directory");
    scratch_made_ = true;
  }
  return scratch_dir_ + "/" + std::string(name);
}

std::string CheckContext::NewId(std::string_view tag) const {
  static std::atomic<int> counter{0};
  return "conf-" + suite_.run_tag() + "-" + std::string(tag) + "-" + std::to_string(++counter);
}

std::string CheckContext::RawExchange(std::string_view bytes,
                                      std::chrono::milliseconds wait) const {
  using namespace asio::experimental::awaitable_operators;
  constexpr auto nothrow = asio::experimental::as_tuple(asio::use_awaitable);
  Result<client::Endpoint> ep = client::ParseUrl(client_.options().url);
  if (!ep.ok()) throw CheckFailure{"bad URL"};
  if (ep->kind == client::Endpoint::Kind::kVsock) {
    throw CheckSkipped{"raw HTTP checks need a TCP or Unix-socket URL"};
  }
  asio::io_context io;
  std::string received;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        asio::generic::stream_protocol::socket sock(io);
        asio::steady_timer timer(io, wait);
        asio::generic::stream_protocol::endpoint target;
        if (ep->kind == client::Endpoint::Kind::kUnix) {
          target = asio::local::stream_protocol::endpoint(ep->path);
        } else {
          asio::ip::tcp::resolver resolver(io);
          auto [rec, results] =
              co_await resolver.async_resolve(ep->host, std::to_string(ep->port), nothrow);
          if (rec || results.empty()) co_return;
          target = asio::ip::tcp::endpoint(*results.begin());
        }
        asio::error_code open_ec;
        sock.open(target.protocol(), open_ec);
        if (open_ec) co_return;
        auto [cec] = co_await sock.async_connect(target, nothrow);
        if (cec) co_return;
        co_await asio::async_write(sock, asio::buffer(bytes), nothrow);
        char buf[4096];
        for (;;) {
          auto r = co_await (sock.async_read_some(asio::buffer(buf), nothrow) ||
                             timer.async_wait(nothrow));
          if (r.index() == 1) break;
          auto [ec, n] = std::get<0>(r);
          if (ec) break;
          received.append(buf, n);
        }
      },
      asio::detached);
  io.run();
  return received;
}

}  // namespace agentd::conformance
