// GET /v1/ports and GET /v1/ports/{port}/connect (docs/PROTOCOL.md,
// "Ports"): the guest's listening TCP ports, and a raw byte tunnel to one
// of them through the daemon's own port and auth.
//
// The tunnel connects to the guest port before it answers, so a closed
// port is a plain 502 the client can read; only then does it switch
// protocols and relay bytes both ways until both directions have ended
// (a half-close is passed on, so request/response protocols work). There
// is no idle deadline: a tunnel to a dev server may sit quiet for hours;
// the number open at once is bounded (--max-tunnels). An upgrade in place
// hands a tunnel over whole: both sockets and the bytes read and not yet
// written (server/handed_streams.h), so the relayed connection goes on.
#include <fcntl.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio/experimental/awaitable_operators.hpp>
#include <charconv>

#include "agentd/protocol/base64.h"
#include "agentd/trees/posix_error.h"
#include "api/query_reader.h"
#include "api/recheck_waits.h"
#include "api/routes.h"
#include "api/wait_slot.h"
#include "proc/listening_ports.h"
#include "server/connection.h"
#include "server/exact_io.h"
#include "server/handed_streams.h"
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

// One direction of a tunnel: the bytes read from its source and not yet
// written to its destination, and whether the source ended (its half-close
// is passed on once those bytes are out). This is what an upgrade in place
// hands over (server/exact_io.h keeps it exact).
struct Direction {
  std::string pending;
  bool ended = false;
};

struct TunnelState {
  Direction to_guest;   // client -> guest port
  Direction to_client;  // guest port -> client
};

void CloseBoth(Socket& a, Socket& b) {
  asio::error_code ignored;
  a.close(ignored);
  b.close(ignored);
}

// Copies bytes from `from` to `to` until `from` ends, then half-closes
// `to`. On an error both sockets close, which ends the other direction.
asio::awaitable<void> Pump(Socket& from, Socket& to, Direction& d) {
  for (;;) {
    asio::error_code wec = co_await FlushExact(to, d.pending);
    if (wec) {
      CloseBoth(from, to);
      co_return;
    }
    if (d.ended) {
      asio::error_code ignored;
      to.shutdown(asio::socket_base::shutdown_send, ignored);
      co_return;
    }
    auto [rec, n] = co_await ReadExact(from, d.pending, kRelayBufferBytes);
    if (rec) {
      CloseBoth(from, to);
      co_return;
    }
    if (n == 0) d.ended = true;
  }
}

json::Value DescribeDirection(const Direction& d) {
  return json::Object().Set("pending_b64", Base64Encode(d.pending)).Set("ended", d.ended);
}

// The tunnel as the next binary takes it (Adopt below); null once either
// socket closed (the tunnel is ending).
json::Value DescribeTunnel(Socket& client, Socket& guest, const TunnelState& st,
                           std::vector<int>& fds) {
  if (!client.is_open() || !guest.is_open()) return json::Value();
  int c = client.native_handle();
  int g = guest.native_handle();
  fds.push_back(c);
  fds.push_back(g);
  json::Array listed;
  listed.emplace_back(c);
  listed.emplace_back(g);
  return json::Object()
      .Set("kind", "tunnel")
      .Set("fds", std::move(listed))
      .Set("client_fd", c)
      .Set("guest_fd", g)
      .Set("to_guest", DescribeDirection(st.to_guest))
      .Set("to_client", DescribeDirection(st.to_client));
}

asio::awaitable<void> Relay(Socket& client, Socket& guest, TunnelState& st) {
  co_await (Pump(client, guest, st.to_guest) && Pump(guest, client, st.to_client));
}

asio::awaitable<void> Connect(const DaemonConfig& config, HandedStreams& streams, Counter& tunnels,
                              Request& req, Response& res) {
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
  TunnelState st;
  st.to_guest.pending = conn.TakeOver();
  Socket& client = conn.socket();
  // As the generic socket type of the client's side: one relay for both.
  asio::error_code assigned;
  Socket guest(upstream->get_executor());
  int family = upstream->local_endpoint(assigned).protocol().family();
  if (!assigned) guest.assign(StreamProtocol(family, IPPROTO_TCP), upstream->release(), assigned);
  if (assigned) co_return;
  HandedStreams::Entry entry =
      streams.Add([&client, &guest,
                   &st](std::vector<int>& fds) { return DescribeTunnel(client, guest, st, fds); },
                  [&client, &guest] { CloseBoth(client, guest); });
  co_await Relay(client, guest, st);
}

Result<Direction> DecodeDirection(const json::Value* v) {
  const json::Value* pending = v ? v->Find("pending_b64") : nullptr;
  const json::Value* ended = v ? v->Find("ended") : nullptr;
  std::optional<std::string> bytes;
  if (pending && pending->is_string()) bytes = Base64Decode(pending->as_string());
  if (!bytes || !ended || !ended->is_bool() || bytes->size() > kRelayBufferBytes) {
    return Status::InvalidRequest("a handed-over tunnel direction is malformed");
  }
  return Direction{std::move(*bytes), ended->as_bool()};
}

// A tunnel the previous binary relayed (an upgrade in place): both sockets
// and each direction's unwritten bytes, relayed on from where they were.
struct AdoptedTunnel {
  AdoptedTunnel(asio::io_context& io, Counter& tunnels) : client(io), guest(io), slot(tunnels) {}
  Socket client;
  Socket guest;
  TunnelState st;
  TunnelSlot slot;
  HandedStreams::Entry entry;
};

// `t` lives in the coroutine's frame until the relay ends.
asio::awaitable<void> RelayAdopted(std::shared_ptr<AdoptedTunnel> t) {
  co_await Relay(t->client, t->guest, t->st);
}

Status Adopt(asio::io_context& io, HandedStreams& streams, Counter& tunnels, const json::Value& e) {
  const json::Value* c = e.Find("client_fd");
  const json::Value* g = e.Find("guest_fd");
  if (!c || !c->is_int() || !g || !g->is_int()) {
    return Status::InvalidRequest("a handed-over tunnel has no descriptors");
  }
  Result<Direction> to_guest = DecodeDirection(e.Find("to_guest"));
  Result<Direction> to_client = DecodeDirection(e.Find("to_client"));
  if (!to_guest.ok()) return to_guest.status();
  if (!to_client.ok()) return to_client.status();
  int cfd = static_cast<int>(c->as_int());
  int gfd = static_cast<int>(g->as_int());
  std::optional<StreamProtocol> client_protocol = InheritedSocketProtocol(cfd);
  sockaddr_storage guest_addr{};
  socklen_t glen = sizeof guest_addr;
  if (!client_protocol ||
      ::getsockname(gfd, reinterpret_cast<sockaddr*>(&guest_addr), &glen) != 0) {
    return PosixError(errno, "a handed-over tunnel's descriptor is not a socket");
  }
  if (guest_addr.ss_family != AF_INET && guest_addr.ss_family != AF_INET6) {
    return Status::InvalidRequest("a handed-over tunnel's guest side is not TCP");
  }
  auto t = std::make_shared<AdoptedTunnel>(io, tunnels);
  asio::error_code ec;
  t->client.assign(*client_protocol, cfd, ec);
  if (ec) return PosixError(ec.value(), "cannot take over a tunnel's client socket");
  // From here the tunnel owns the client descriptor: a failure closes it.
  ::fcntl(cfd, F_SETFD, FD_CLOEXEC);
  t->guest.assign(StreamProtocol(guest_addr.ss_family, IPPROTO_TCP), gfd, ec);
  if (ec) {
    ::close(gfd);
    return Status::Ok();  // the client's side closes with `t`: the tunnel ended
  }
  ::fcntl(gfd, F_SETFD, FD_CLOEXEC);
  t->st.to_guest = std::move(*to_guest);
  t->st.to_client = std::move(*to_client);
  AdoptedTunnel* raw = t.get();
  t->entry = streams.Add(
      [raw](std::vector<int>& fds) {
        return DescribeTunnel(raw->client, raw->guest, raw->st, fds);
      },
      [raw] { CloseBoth(raw->client, raw->guest); });
  asio::co_spawn(io, RelayAdopted(std::move(t)), asio::detached);
  return Status::Ok();
}

}  // namespace

void RegisterPortRoutes(Router& router, ApiContext& ctx, asio::io_context& io) {
  auto tunnels = std::make_shared<Counter>();
  ctx.streams.SetAdopter("tunnel", [&io, &streams = ctx.streams, tunnels](const json::Value& e) {
    return Adopt(io, streams, *tunnels, e);
  });
  router.Add("GET", "/v1/ports",
             [&ctx](Request& req, Response& res) { return ListPorts(ctx, req, res); });
  router.Add("GET", "/v1/ports/{port}/connect",
             [&config = ctx.config, &streams = ctx.streams, tunnels](Request& req, Response& res) {
               return Connect(config, streams, *tunnels, req, res);
             });
}

}  // namespace agentd
