#include "cutting_proxy.h"

#include <asio.hpp>

#include "agentd/client/nothrow.h"

namespace agentd::testing {

using client::kNothrow;
namespace {

using asio::ip::tcp;

struct Pair {
  tcp::socket client;
  tcp::socket daemon;
  void Close() {
    asio::error_code ec;
    client.close(ec);
    daemon.close(ec);
  }
};

asio::awaitable<void> Pump(std::shared_ptr<Pair> p, bool to_client, uint64_t budget,
                           std::atomic<int>* cuts) {
  tcp::socket& from = to_client ? p->daemon : p->client;
  tcp::socket& to = to_client ? p->client : p->daemon;
  char buf[16384];
  for (;;) {
    auto [ec, n] = co_await from.async_read_some(asio::buffer(buf), kNothrow);
    if (ec) break;
    size_t send = n;
    bool cut = false;
    if (to_client && budget != UINT64_MAX) {
      if (n >= budget) {
        send = budget;
        cut = true;
      }
      budget -= send;
    }
    auto [wec, wn] = co_await asio::async_write(to, asio::buffer(buf, send), kNothrow);
    if (wec) break;
    if (cut) {
      ++*cuts;
      break;
    }
  }
  p->Close();
}

}  // namespace

struct CuttingProxy::Impl {
  asio::io_context io;
  tcp::acceptor acceptor{io};
};

CuttingProxy::CuttingProxy(int daemon_port, std::function<uint64_t(int)> cut_after)
    : impl_(std::make_unique<Impl>()) {
  tcp::endpoint listen(asio::ip::make_address("127.0.0.1"), 0);
  impl_->acceptor.open(listen.protocol());
  impl_->acceptor.bind(listen);
  impl_->acceptor.listen();
  port_ = impl_->acceptor.local_endpoint().port();
  tcp::endpoint target(asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(daemon_port));
  asio::co_spawn(
      impl_->io,
      [this, target, cut_after]() -> asio::awaitable<void> {
        for (int n = 0;; ++n) {
          auto [ec, client] = co_await impl_->acceptor.async_accept(kNothrow);
          if (ec) co_return;
          ++connections_;
          auto p = std::make_shared<Pair>(Pair{std::move(client), tcp::socket(impl_->io)});
          auto [cec] = co_await p->daemon.async_connect(target, kNothrow);
          if (cec) {
            p->Close();
            continue;
          }
          uint64_t budget = cut_after(n);
          asio::co_spawn(impl_->io, Pump(p, true, budget, &cuts_), asio::detached);
          asio::co_spawn(impl_->io, Pump(p, false, UINT64_MAX, &cuts_), asio::detached);
        }
      },
      asio::detached);
  thread_ = std::thread([this] { impl_->io.run(); });
}

CuttingProxy::~CuttingProxy() {
  asio::post(impl_->io, [this] {
    asio::error_code ec;
    impl_->acceptor.close(ec);
    impl_->io.stop();
  });
  thread_.join();
}

}  // namespace agentd::testing
