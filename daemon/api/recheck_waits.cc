#include "api/recheck_waits.h"

#include <algorithm>
#include <optional>

#include "agentd/protocol/fs.h"
#include "api/wait_slot.h"
#include "fs/file_ops.h"
#include "proc/listening_ports.h"
#include "sys/awaitable.h"

namespace agentd {
namespace {

using Clock = ChangeSignal::Clock;

// Sleeps one re-check interval (never past `deadline`); false when the
// client has gone, so the wait is dropped and its slot freed.
asio::awaitable<bool> NextCheck(Request& req, Clock::time_point deadline, bool& watch_client) {
  if (req.PeerClosed()) co_return false;
  ChangeSignal woken;  // only the client's socket wakes it early
  co_await SleepOrPeer(req, woken, std::min(deadline, Clock::now() + kRecheckInterval),
                       watch_client);
  co_return !req.PeerClosed();
}

json::Array PortList(const std::vector<ListeningPort>& listening) {
  json::Array ports;
  for (const ListeningPort& p : listening) {
    ports.push_back(json::Object()
                        .Set("port", static_cast<int64_t>(p.port))
                        .Set("address", p.address)
                        .Set("family", p.family));
  }
  return ports;
}

}  // namespace

asio::awaitable<void> AnswerPortWait(ApiContext& ctx, Request& req, Response& res, uint16_t port,
                                     uint64_t wait_ms) {
  Result<std::optional<WaitSlot>> slot = WaitSlot::Take(ctx);
  if (!slot.ok()) {
    co_await res.SendError(slot.status());
    co_return;
  }
  auto deadline = Clock::now() + std::chrono::milliseconds(wait_ms);
  bool watch_client = true;
  for (;;) {
    std::vector<ListeningPort> listening = ListListeningPorts();
    bool up = std::any_of(listening.begin(), listening.end(),
                          [port](const ListeningPort& p) { return p.port == port; });
    if (up || Clock::now() >= deadline) {
      co_await res.SendJson(200, json::Object()
                                     .Set("ports", PortList(listening))
                                     .Set("wait_for", static_cast<int64_t>(port))
                                     .Set("listening", up));
      co_return;
    }
    bool stay = co_await NextCheck(req, deadline, watch_client);
    if (!stay) co_return;
  }
}

asio::awaitable<void> AnswerPathWait(ApiContext& ctx, FsService& fs, Request& req, Response& res,
                                     const RelPath& rel, bool follow, bool until_gone,
                                     uint64_t wait_ms) {
  Result<std::optional<WaitSlot>> slot = WaitSlot::Take(ctx);
  if (!slot.ok()) {
    co_await res.SendError(slot.status());
    co_return;
  }
  auto deadline = Clock::now() + std::chrono::milliseconds(wait_ms);
  bool watch_client = true;
  // A missing path (or a parent that is not a directory) does not exist;
  // any other refusal (unsafe_path, permission_denied) is answered as is.
  auto check = [&fs, &rel, follow]() -> Result<std::optional<FileStat>> {
    Result<FileStat> st = StatPath(fs.root(), rel, follow);
    if (st.ok()) return std::optional<FileStat>(std::move(*st));
    ErrorCode code = st.status().code();
    if (code == ErrorCode::kNotFound || code == ErrorCode::kNotADirectory) {
      return std::optional<FileStat>();
    }
    return st.status();
  };
  for (;;) {
    Result<std::optional<FileStat>> now = co_await RunBlocking(ctx.blocking, check);
    if (!now.ok()) {
      co_await res.SendError(now.status());
      co_return;
    }
    bool exists = now->has_value();
    if (exists != until_gone || Clock::now() >= deadline) {
      json::Value body = exists ? EncodeFileStat(**now) : json::Value(json::Object());
      json::Object& o = body.as_object();
      if (!exists) o.Set("path", fs.policy().Display(rel));
      o.Set("exists", exists);
      o.Set("until", until_gone ? "gone" : "exists");
      o.Set("met", exists != until_gone);
      co_await res.SendJson(200, body);
      co_return;
    }
    bool stay = co_await NextCheck(req, deadline, watch_client);
    if (!stay) co_return;
  }
}

}  // namespace agentd
