// watch, ports and forward: file system changes, listening ports, and
// local ports tunnelled to guest ports.
#include <signal.h>
#include <unistd.h>

#include <asio.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <charconv>
#include <cstdio>

#include "agentd/client/nothrow.h"
#include "commands.h"
#include "exec_format.h"
#include "exit_codes.h"

namespace agentd::cli {
namespace {

using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;
using client::kNothrow;

std::optional<uint64_t> WholeNumber(std::string_view text) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return n;
}

json::Value EncodeWatchEvent(const client::FsWatchEvent& e) {
  json::Object o;
  o.Set("event", e.kind).Set("id", e.id);
  if (e.kind == "overflow") {
    o.Set("reason", e.reason);
  } else {
    o.Set("path", e.path).Set("type", e.type);
    if (e.kind == "renamed") o.Set("from", e.from);
  }
  return o;
}

std::string DescribeWatchEvent(const client::FsWatchEvent& e) {
  if (e.kind == "overflow") return "overflow  events were lost (" + e.reason + "): rescan\n";
  std::string line = e.kind + std::string(9 - std::min<size_t>(e.kind.size(), 8), ' ') + e.type +
                     std::string(5 - std::min<size_t>(e.type.size(), 4), ' ');
  if (e.kind == "renamed") line += e.from + " -> ";
  return line + e.path + "\n";
}

// Relays bytes between a local connection and a tunnel until both ends close.
asio::awaitable<void> LocalToTunnel(tcp::socket& local, client::Tunnel& tunnel) {
  std::vector<char> buf(64 * 1024);
  for (;;) {
    auto [ec, n] = co_await local.async_read_some(asio::buffer(buf), kNothrow);
    if (ec) {
      tunnel.ShutdownWrite();
      co_return;
    }
    Status wrote = co_await tunnel.AsyncWriteAll(std::string_view(buf.data(), n));
    if (!wrote.ok()) {
      asio::error_code ignored;
      local.close(ignored);
      co_return;
    }
  }
}

asio::awaitable<void> TunnelToLocal(client::Tunnel& tunnel, tcp::socket& local) {
  std::vector<char> buf(64 * 1024);
  for (;;) {
    Result<size_t> n = co_await tunnel.AsyncReadSome(asio::buffer(buf));
    asio::error_code ignored;
    if (!n.ok() || *n == 0) {
      local.shutdown(asio::socket_base::shutdown_send, ignored);
      co_return;
    }
    auto [ec, written] = co_await asio::async_write(local, asio::buffer(buf.data(), *n), kNothrow);
    if (ec) {
      tunnel.Close();
      co_return;
    }
  }
}

asio::awaitable<void> ForwardOne(client::AsyncClient& c, tcp::socket local, uint16_t remote,
                                 bool quiet) {
  Result<std::unique_ptr<client::Tunnel>> tunnel = co_await c.OpenTunnel(remote);
  if (!tunnel.ok()) {
    if (!quiet) {
      std::string line = "agentctl: forward: " + tunnel.status().message() + "\n";
      WriteAllTo(STDERR_FILENO, line);
    }
    co_return;  // closing the local connection tells its client
  }
  co_await (LocalToTunnel(local, **tunnel) && TunnelToLocal(**tunnel, local));
}

asio::awaitable<void> AcceptLoop(client::AsyncClient& c, tcp::acceptor& acceptor, uint16_t remote,
                                 bool quiet) {
  for (;;) {
    auto [ec, sock] = co_await acceptor.async_accept(kNothrow);
    if (ec == asio::error::operation_aborted) co_return;
    if (ec) continue;  // e.g. out of descriptors for a moment
    asio::error_code ignored;
    sock.set_option(tcp::no_delay(true), ignored);
    asio::co_spawn(acceptor.get_executor(), ForwardOne(c, std::move(sock), remote, quiet),
                   asio::detached);
  }
}

}  // namespace

int CmdWatch(Context& ctx) {
  std::optional<uint64_t> count, seconds;
  if (auto v = ctx.args().Get("count")) {
    count = WholeNumber(*v);
    if (!count || *count == 0) return ctx.out().UsageError("--count takes a positive number");
  }
  if (auto v = ctx.args().Get("for")) {
    seconds = WholeNumber(*v);
    if (!seconds) return ctx.out().UsageError("--for takes whole seconds");
  }
  bool json = ctx.out().json();
  if (json && !count && !seconds) {
    return ctx.out().UsageError("--json needs --count or --for (one envelope at the end)");
  }
  asio::io_context io;
  client::AsyncClient c(io.get_executor(), ctx.client_options());
  json::Array events;
  uint64_t seen = 0;
  client::WatchCallbacks cb;
  cb.on_event = [&](const client::FsWatchEvent& e) {
    if (json) {
      events.push_back(EncodeWatchEvent(e));
    } else {
      std::string line = DescribeWatchEvent(e);
      WriteAllTo(STDOUT_FILENO, line);
    }
    return !count || ++seen < *count;
  };
  cb.on_ready = [&] {
    if (!json && ctx.out().stderr_is_tty()) {
      WriteAllTo(STDERR_FILENO, "watching " + ctx.args().positional[0] + "\n");
    }
  };
  client::WatchOptions options;
  options.recursive = ctx.args().Has("recursive");
  Result<uint64_t> result = uint64_t{0};
  bool finished = false;
  asio::steady_timer stop_after(io);
  if (seconds) {
    stop_after.expires_after(std::chrono::seconds(*seconds));
    stop_after.async_wait([&](const asio::error_code& ec) {
      if (!ec) io.stop();
    });
  }
  c.AsyncWatch(ctx.args().positional[0], options, cb, [&](Result<uint64_t> r) {
    result = std::move(r);
    finished = true;
    stop_after.cancel();
  });
  io.run();
  if (finished && !result.ok()) return ctx.out().Fail(result.status());
  json::Object out;
  out.Set("events", std::move(events));
  return ctx.out().Succeed(out, "");
}

int CmdPorts(Context& ctx) {
  Result<std::vector<client::GuestPort>> r = ctx.client().ListPorts();
  if (!r.ok()) return ctx.out().Fail(r.status());
  std::vector<std::vector<std::string>> rows = {{"PORT", "ADDRESS", "FAMILY"}};
  json::Array ports;
  for (const client::GuestPort& p : *r) {
    rows.push_back({std::to_string(p.port), p.address, p.family});
    ports.push_back(json::Object()
                        .Set("port", static_cast<int64_t>(p.port))
                        .Set("address", p.address)
                        .Set("family", p.family));
  }
  json::Object out;
  out.Set("ports", std::move(ports));
  return ctx.out().Succeed(out, Output::Table(rows));
}

int CmdForward(Context& ctx) {
  // LOCAL:REMOTE, or REMOTE alone for the same number on both sides.
  std::string spec = ctx.args().positional[0];
  size_t colon = spec.rfind(':');
  std::optional<uint64_t> local =
      WholeNumber(colon == std::string::npos ? spec : spec.substr(0, colon));
  std::optional<uint64_t> remote =
      WholeNumber(colon == std::string::npos ? spec : spec.substr(colon + 1));
  if (!local || !remote || *local > 65535 || *remote == 0 || *remote > 65535) {
    return ctx.out().UsageError("forward takes LOCAL:REMOTE ports (LOCAL 0 picks a free one)");
  }
  std::string bind = ctx.args().Get("bind").value_or("127.0.0.1");
  asio::io_context io;
  asio::error_code ec;
  asio::ip::address address = asio::ip::make_address(bind, ec);
  if (ec) return ctx.out().UsageError("--bind takes an IP address");
  tcp::acceptor acceptor(io);
  tcp::endpoint at(address, static_cast<uint16_t>(*local));
  acceptor.open(at.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(at, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return ctx.out().Fail(
        Status::Error(ErrorCode::kIoError, "cannot listen on " + bind + ":" +
                                               std::to_string(*local) + ": " + ec.message()),
        kExitFailure);
  }
  uint16_t bound = acceptor.local_endpoint().port();
  client::AsyncClient c(io.get_executor(), ctx.client_options());
  json::Object started;
  started.Set("local", bind + ":" + std::to_string(bound)).Set("remote", *remote);
  ctx.out().Succeed(started, "forwarding " + bind + ":" + std::to_string(bound) +
                                 " -> guest port " + std::to_string(*remote) + "\n");
  std::fflush(stdout);
  asio::signal_set stop(io, SIGINT, SIGTERM);
  stop.async_wait([&](const asio::error_code&, int) {
    acceptor.close();
    io.stop();
  });
  asio::co_spawn(io, AcceptLoop(c, acceptor, static_cast<uint16_t>(*remote), ctx.out().json()),
                 asio::detached);
  io.run();
  return 0;
}

}  // namespace agentd::cli
