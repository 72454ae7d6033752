#include "fake_daemon.h"

#include <asio.hpp>

#include "agentd/client/nothrow.h"

namespace agentd::testing {

using client::kNothrow;

struct FakeDaemon::Impl {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor{io};
  std::string response;
};

std::string TarResponse(const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/x-tar\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

FakeDaemon::FakeDaemon(std::string response) : impl_(std::make_unique<Impl>()) {
  impl_->response = std::move(response);
  asio::ip::tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
  impl_->acceptor.open(ep.protocol());
  impl_->acceptor.bind(ep);
  impl_->acceptor.listen();
  port_ = impl_->acceptor.local_endpoint().port();
  asio::co_spawn(
      impl_->io,
      [this]() -> asio::awaitable<void> {
        for (;;) {
          auto [ec, sock] = co_await impl_->acceptor.async_accept(kNothrow);
          if (ec) co_return;
          // Read the request head, then answer; the body (if any) is ignored.
          std::string head;
          char buf[4096];
          while (head.find("\r\n\r\n") == std::string::npos) {
            auto [rec, n] = co_await sock.async_read_some(asio::buffer(buf), kNothrow);
            if (rec) break;
            head.append(buf, n);
          }
          co_await asio::async_write(sock, asio::buffer(impl_->response), kNothrow);
          asio::error_code ignored;
          sock.shutdown(asio::socket_base::shutdown_send, ignored);
        }
      },
      asio::detached);
  thread_ = std::thread([this] { impl_->io.run(); });
}

FakeDaemon::~FakeDaemon() {
  asio::post(impl_->io, [this] {
    asio::error_code ec;
    impl_->acceptor.close(ec);
    impl_->io.stop();
  });
  thread_.join();
}

}  // namespace agentd::testing
