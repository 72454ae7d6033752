// GET /v1/ports and GET /v1/ports/{port}/connect (docs/PROTOCOL.md,
// "Ports"): the guest's listening TCP ports, and a raw byte tunnel to one
// of them through the daemon's own port and auth.
//
// The tunnel connects to the guest port before it answers, so a closed
// port is a plain 502 the client can read; only then does it switch
// protocols and relay bytes both ways until both directions have ended
// (a half-close is passed on, so request/response protocols work). There
// is no idle deadline: a tunnel to a dev server may sit quiet for hours;
// the number open at once is bounded (--max-tunnels).
#include <strings.h>

#include <asio/experimental/awaitable_operators.hpp>
#include <charconv>

#include "api/query_reader.h"
#include "api/recheck_waits.h"
#include "api/routes.h"
#include "api/wait_slot.h"
#include "proc/listening_ports.h"
#include "server/connection.h"
#include "sys/awaitable.h"

namespace agentd {
namespace {

using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

constexpr auto kConnectTimeout = std::chrono::seconds(5);
constexpr size_t kRelayBufferBytes = 64 * 1024;

struct Counter {
  int64_t open = 0;
};

class TunnelSlot {
 public:
  explicit TunnelSlot(Counter& c) : c_(c) { ++c_.open; }
  ~TunnelSlot() { --c_.open; }
  TunnelSlot(const TunnelSlot&) = delete;
  TunnelSlot& operator=(const TunnelSlot&) = delete;

 private:
  Counter& c_;
};

asio::awaitable<void> ListPorts(ApiContext& ctx, Request& req, Response& res) {
  QueryReader q(req.query());
  std::optional<uint64_t> wait_for = q.Number("wait_for", 1, 65535);
  std::optional<uint64_t> wait_ms = q.Number("wait_ms", 0, kMaxConditionWaitMs);
  if (wait_ms && !wait_for) {
    q.Fail(Status::InvalidRequest("query parameter \"wait_ms\" needs wait_for")
               .With("field", "wait_ms"));
  }
  Status s = q.Finish();
  if (!s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  if (wait_for) {
    co_await AnswerPortWait(ctx, req, res, static_cast<uint16_t>(*wait_for), wait_ms.value_or(0));
    co_return;
  }
  json::Array ports;
  for (const ListeningPort& p : ListListeningPorts()) {
    ports.push_back(json::Object()
                        .Set("port", static_cast<int64_t>(p.port))
                        .Set("address", p.address)
                        .Set("family", p.family));
  }
  co_await res.SendJson(200, json::Object().Set("ports", std::move(ports)));
}

Result<uint16_t> ParsePort(std::string_view text) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 1 || value > 65535) {
    return Status::InvalidRequest("port must be a number from 1 to 65535")
        .With("field", "port")
        .With("value", std::string(text));
  }
  return static_cast<uint16_t>(value);
}

// Connects to the port on the guest's loopback (IPv4, then IPv6), within
// kConnectTimeout.
asio::awaitable<Result<tcp::socket>> ConnectLocal(uint16_t port) {
  auto executor = co_await asio::this_coro::executor;
  std::string last_error;
  const char* addresses[] = {"127.0.0.1", "::1"};
  for (const char* address : addresses) {
    tcp::socket sock(executor);
    tcp::endpoint to(asio::ip::make_address(address), port);
    asio::steady_timer timer(executor, kConnectTimeout);
    auto cancel = [&sock](const asio::error_code& ec) {
      if (!ec) sock.close();
    };
    timer.async_wait(cancel);
    auto [ec] = co_await sock.async_connect(to, kUseNothrow);
    timer.cancel();
    if (!ec) {
      asio::error_code ignored;
      sock.set_option(tcp::no_delay(true), ignored);
      co_return std::move(sock);
    }
    last_error = ec == asio::error::operation_aborted ? "connect timed out" : ec.message();
  }
  co_return Status::Error(ErrorCode::kPortUnreachable, "nothing accepts connections on port " +
                                                           std::to_string(port) +
                                                           " in the guest: " + last_error)
      .With("port", static_cast<int64_t>(port))
      .With("reason", last_error);
}

// Copies bytes from `from` to `to` until `from` ends, then half-closes
// `to`. On an error both sockets close, which ends the other direction.
template <typename From, typename To>
asio::awaitable<void> Pump(From& from, To& to) {
  std::vector<char> buf(kRelayBufferBytes);
  for (;;) {
    auto [rec, n] = co_await from.async_read_some(asio::buffer(buf), kUseNothrow);
    if (rec) {
      asio::error_code ignored;
      if (rec == asio::error::eof) {
        to.shutdown(asio::socket_base::shutdown_send, ignored);
      } else {
        from.close(ignored);
        to.close(ignored);
      }
      co_return;
    }
    auto [wec, written] = co_await asio::async_write(to, asio::buffer(buf.data(), n), kUseNothrow);
    if (wec) {
      asio::error_code ignored;
      from.close(ignored);
      to.close(ignored);
      co_return;
    }
  }
}

asio::awaitable<void> Connect(const DaemonConfig& config, Counter& tunnels, Request& req,
                              Response& res) {
  Status s = QueryReader(req.query()).Finish();
  Result<uint16_t> port = ParsePort(req.Param("port"));
  if (s.ok()) s = port.status();
  const std::string* upgrade = req.Header("upgrade");
  if (s.ok() && (!req.head().upgrade || !upgrade || strcasecmp(upgrade->c_str(), "tcp") != 0)) {
    s = Status::InvalidRequest("a tunnel needs \"Connection: Upgrade\" and \"Upgrade: tcp\"")
            .With("field", "Upgrade");
  }
  if (s.ok() && tunnels.open >= config.max_tunnels) {
    s = Status::Error(ErrorCode::kTooManyConnections,
                      "the daemon already relays " + std::to_string(tunnels.open) + " tunnels")
            .With("limit", config.max_tunnels);
  }
  if (!s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  TunnelSlot slot(tunnels);
  Result<tcp::socket> upstream = co_await ConnectLocal(*port);
  if (!upstream.ok()) {
    co_await res.SendError(upstream.status());
    co_return;
  }
  Status switched = co_await res.SwitchProtocols("tcp");
  if (!switched.ok()) co_return;
  Connection& conn = req.connection();
  std::string early = conn.TakeOver();
  if (!early.empty()) {
    auto [ec, n] = co_await asio::async_write(*upstream, asio::buffer(early), kUseNothrow);
    if (ec) co_return;
  }
  Socket& client = conn.socket();
  co_await (Pump(client, *upstream) && Pump(*upstream, client));
}

}  // namespace

void RegisterPortRoutes(Router& router, ApiContext& ctx) {
  auto tunnels = std::make_shared<Counter>();
  router.Add("GET", "/v1/ports",
             [&ctx](Request& req, Response& res) { return ListPorts(ctx, req, res); });
  router.Add("GET", "/v1/ports/{port}/connect",
             [&config = ctx.config, tunnels](Request& req, Response& res) {
               return Connect(config, *tunnels, req, res);
             });
}

}  // namespace agentd
