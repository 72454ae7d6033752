#include "api/wait_slot.h"

#include <memory>

namespace agentd {

Result<std::optional<WaitSlot>> WaitSlot::Take(ApiContext& ctx) {
  if (ctx.waits_open >= kMaxWaits) {
    return Status::Error(
               ErrorCode::kTooManyWaits,
               "the daemon already holds " + std::to_string(ctx.waits_open) + " waits (the limit)")
        .With("limit", kMaxWaits);
  }
  return std::optional<WaitSlot>(WaitSlot(&ctx.waits_open));
}

asio::awaitable<void> SleepOrPeer(Request& req, ChangeSignal& signal,
                                  ChangeSignal::Clock::time_point deadline, bool& watch_client) {
  if (watch_client && req.PeerSentBytes()) watch_client = false;
  // The socket's handler may run after this wait ended (it was already
  // queued): it then finds `live` false and leaves `signal` alone.
  auto live = std::make_shared<bool>(true);
  if (watch_client) {
    req.WaitPeerReadable([live, &signal](const asio::error_code& ec) {
      if (!ec && *live) signal.Notify();
    });
  }
  co_await signal.Wait(deadline);
  *live = false;
  if (watch_client) req.CancelPeerWait();
}

}  // namespace agentd
