#include "reactive_calls.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <optional>

#include "agentd/client/nothrow.h"
#include "agentd/protocol/percent.h"
#include "agentd/protocol/sse.h"

namespace agentd::client {
namespace {

// The daemon sends a keepalive at least every 15 s.
constexpr std::chrono::seconds kWatchSilenceLimit{45};

std::string Text(const json::Value& doc, std::string_view key) {
  const json::Value* v = doc.Find(key);
  return v && v->is_string() ? v->as_string() : std::string();
}

Result<FsWatchEvent> DecodeWatchEvent(const SseEvent& ev) {
  Result<json::Value> doc = json::Parse(ev.data);
  if (!doc.ok() || !doc->is_object()) {
    return Status::Error(ErrorCode::kProtocolError, "watch event data is not a JSON object");
  }
  FsWatchEvent out;
  out.kind = ev.event;
  out.path = Text(*doc, "path");
  out.type = Text(*doc, "type");
  out.from = Text(*doc, "from");
  out.reason = Text(*doc, "reason");
  std::from_chars(ev.id.data(), ev.id.data() + ev.id.size(), out.id);
  if (out.kind != "overflow" && out.path.empty()) {
    return Status::Error(ErrorCode::kProtocolError, "watch event without a path");
  }
  return out;
}

}  // namespace

asio::awaitable<Result<uint64_t>> WatchCall(Transport& t, std::string path, WatchOptions options,
                                            WatchCallbacks cb) {
  uint64_t delivered = 0;
  int quiet_failures = 0;
  bool watched_before = false;
  for (;;) {
    HttpRequest req;
    req.target = "/v1/fs/watch?path=" + PercentEncode(path, /*keep_slash=*/true) +
                 "&recursive=" + (options.recursive ? "1" : "0");
    req.headers.emplace_back("Accept", "text/event-stream");
    req.idempotent = true;
    Status failure;
    Result<std::unique_ptr<ResponseStream>> stream = co_await t.Open(req);
    if (!stream.ok()) {
      failure = stream.status();
      if (!IsRetryableFailure(failure)) co_return failure;
    } else {
      // Events between the lost stream and this one are unknown: say so,
      // as the daemon does for its own losses, so the caller rescans.
      bool stop = false;
      if (watched_before && cb.on_event) {
        FsWatchEvent lost;
        lost.kind = "overflow";
        lost.reason = "reconnected";
        stop = !cb.on_event(lost);
      }
      watched_before = true;
      if (cb.on_ready) cb.on_ready();
      Status event_error;
      SseDecoder decoder([&](SseEvent&& ev) {
        if (stop || !event_error.ok()) return;
        Result<FsWatchEvent> e = DecodeWatchEvent(ev);
        if (!e.ok()) {
          event_error = e.status();
          return;
        }
        ++delivered;
        quiet_failures = 0;
        if (cb.on_event && !cb.on_event(*e)) stop = true;
      });
      while (!stop) {
        Result<std::string_view> chunk =
            co_await (*stream)->Read(Clock::now() + kWatchSilenceLimit);
        if (!chunk.ok()) {
          failure = chunk.status();
          break;
        }
        if (chunk->empty()) co_return delivered;  // the watched directory went away
        if (!decoder.Feed(*chunk)) {
          co_return Status::Error(ErrorCode::kProtocolError, "watch stream line too long");
        }
        if (!event_error.ok()) co_return event_error;
      }
      if (stop) {
        (*stream)->connection().Close();  // mid-stream: never reused
        co_return delivered;
      }
    }
    if (++quiet_failures > t.options().max_stream_reconnects) co_return failure;
    asio::steady_timer pause(t.executor(), t.Backoff(quiet_failures));
    co_await pause.async_wait(kNothrow);
  }
}

asio::awaitable<Result<std::vector<GuestPort>>> ListPortsCall(Transport& t) {
  HttpRequest req;
  req.target = "/v1/ports";
  req.idempotent = true;
  Result<HttpResponse> r = co_await t.Call(req);
  if (!r.ok()) co_return r.status();
  Result<json::Value> doc = json::Parse(r->body);
  const json::Value* ports = doc.ok() ? doc->Find("ports") : nullptr;
  if (!ports || !ports->is_array()) {
    co_return Status::Error(ErrorCode::kProtocolError, "the port list is not {\"ports\": [...]}");
  }
  std::vector<GuestPort> out;
  for (const json::Value& p : ports->as_array()) {
    const json::Value* n = p.Find("port");
    if (!n || !n->is_int() || n->as_int() < 1 || n->as_int() > 65535) {
      co_return Status::Error(ErrorCode::kProtocolError, "a port entry lacks a valid \"port\"");
    }
    out.push_back(
        GuestPort{static_cast<uint16_t>(n->as_int()), Text(p, "address"), Text(p, "family")});
  }
  co_return out;
}

namespace {

// Repeats GET `target`&wait_ms=... in rounds of at most 30 s until the
// answer's boolean `member` is true or `timeout` passed; that boolean.
asio::awaitable<Result<bool>> WaitRounds(Transport& t, std::string target, std::string member,
                                         std::optional<std::chrono::milliseconds> timeout) {
  using Clock = std::chrono::steady_clock;
  constexpr std::chrono::milliseconds kRound{30000};
  auto start = Clock::now();
  for (;;) {
    std::chrono::milliseconds wait = kRound;
    if (timeout) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(start + *timeout - Clock::now());
      wait = std::clamp(left, std::chrono::milliseconds(0), kRound);
    }
    HttpRequest req;
    req.target = target + "&wait_ms=" + std::to_string(wait.count());
    req.idempotent = true;
    req.extra_wait = wait;
    Result<HttpResponse> r = co_await t.Call(req);
    if (!r.ok()) co_return r.status();
    Result<json::Value> doc = json::Parse(r->body);
    const json::Value* v = doc.ok() ? doc->Find(member) : nullptr;
    if (!v || !v->is_bool()) {
      co_return Status::Error(ErrorCode::kProtocolError, "the answer lacks \"" + member + "\"");
    }
    if (v->as_bool() || (timeout && Clock::now() >= start + *timeout)) co_return v->as_bool();
  }
}

}  // namespace

asio::awaitable<Result<bool>> WaitForPortCall(Transport& t, uint16_t port,
                                              std::optional<std::chrono::milliseconds> timeout) {
  if (port == 0) {
    co_return Status::InvalidRequest("port must be from 1 to 65535").With("field", "port");
  }
  co_return co_await WaitRounds(t, "/v1/ports?wait_for=" + std::to_string(port), "listening",
                                timeout);
}

asio::awaitable<Result<bool>> WaitForPathCall(Transport& t, std::string path, bool gone,
                                              std::optional<std::chrono::milliseconds> timeout) {
  std::string target =
      "/v1/fs/stat?path=" + PercentEncode(path, false) + (gone ? "&until=gone" : "&until=exists");
  co_return co_await WaitRounds(t, std::move(target), "met", timeout);
}

asio::awaitable<Result<std::unique_ptr<Tunnel>>> OpenTunnelCall(Transport& t, uint16_t port) {
  if (port == 0) {
    co_return Status::InvalidRequest("port must be from 1 to 65535").With("field", "port");
  }
  HttpRequest req;
  req.target = "/v1/ports/" + std::to_string(port) + "/connect";
  req.headers.emplace_back("Connection", "Upgrade");
  req.headers.emplace_back("Upgrade", "tcp");
  req.idempotent = true;  // nothing is relayed before the 101
  Result<std::unique_ptr<ResponseStream>> stream = co_await t.Open(req);
  if (!stream.ok()) co_return stream.status();
  HttpConnection& conn = (*stream)->connection();
  if ((*stream)->head().status != 101) {
    conn.Close();
    co_return Status::Error(ErrorCode::kProtocolError,
                            "the daemon answered " + std::to_string((*stream)->head().status) +
                                " instead of 101 Switching Protocols");
  }
  std::string early = conn.TakeUpgradeBytes();
  asio::generic::stream_protocol::socket socket(std::move(conn.socket()));
  conn.Close();
  asio::error_code ec;
  socket.non_blocking(false, ec);  // the tunnel's own blocking reads and writes wait
  if (ec) co_return Status::Error(ErrorCode::kTransport, "tunnel set-up failed: " + ec.message());
  co_return std::make_unique<Tunnel>(std::move(socket), std::move(early));
}

size_t Tunnel::TakeEarly(asio::mutable_buffer buf) {
  size_t n = std::min(buf.size(), early_.size() - early_taken_);
  std::memcpy(buf.data(), early_.data() + early_taken_, n);
  early_taken_ += n;
  if (early_taken_ == early_.size()) {
    early_.clear();
    early_taken_ = 0;
  }
  return n;
}

Result<size_t> Tunnel::ReadSome(asio::mutable_buffer buf) {
  if (!early_.empty()) return TakeEarly(buf);
  asio::error_code ec;
  size_t n = socket_.read_some(buf, ec);
  if (ec == asio::error::eof) return size_t{0};
  if (ec) return Status::Error(ErrorCode::kTransport, "tunnel read failed: " + ec.message());
  return n;
}

Status Tunnel::WriteAll(std::string_view bytes) {
  asio::error_code ec;
  asio::write(socket_, asio::buffer(bytes), ec);
  if (ec) return Status::Error(ErrorCode::kTransport, "tunnel write failed: " + ec.message());
  return Status::Ok();
}

asio::awaitable<Result<size_t>> Tunnel::AsyncReadSome(asio::mutable_buffer buf) {
  if (!early_.empty()) co_return TakeEarly(buf);
  auto [ec, n] = co_await socket_.async_read_some(buf, kNothrow);
  if (ec == asio::error::eof) co_return size_t{0};
  if (ec) co_return Status::Error(ErrorCode::kTransport, "tunnel read failed: " + ec.message());
  co_return n;
}

asio::awaitable<Status> Tunnel::AsyncWriteAll(std::string_view bytes) {
  auto [ec, n] = co_await asio::async_write(socket_, asio::buffer(bytes), kNothrow);
  if (ec) co_return Status::Error(ErrorCode::kTransport, "tunnel write failed: " + ec.message());
  co_return Status::Ok();
}

void Tunnel::ShutdownWrite() {
  asio::error_code ec;
  socket_.shutdown(asio::socket_base::shutdown_send, ec);
}

void Tunnel::Close() {
  asio::error_code ec;
  socket_.close(ec);
}

}  // namespace agentd::client
