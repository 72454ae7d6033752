// WaitSlot: one of the daemon's slots for condition waits (docs/PROTOCOL.md,
// "Waits": until=match on an exec poll, wait_for on ports, until= on
// stat). Each wait holds a timer and, for output, a matcher window, so
// their number is bounded; one more is refused with 503 too_many_waits
// naming the limit. Used only on the io thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "agentd/protocol/status.h"
#include "api/api_context.h"
#include "exec/change_signal.h"
#include "server/request.h"

namespace agentd {

inline constexpr int64_t kMaxWaits = 256;
// wait_ms of a condition wait: the same ceiling as an exec's long poll.
inline constexpr uint64_t kMaxConditionWaitMs = 300'000;

class WaitSlot {
 public:
  // A slot, or 503 too_many_waits with `limit`.
  static Result<std::optional<WaitSlot>> Take(ApiContext& ctx);
  WaitSlot(WaitSlot&& other) noexcept : open_(other.open_) { other.open_ = nullptr; }
  WaitSlot(const WaitSlot&) = delete;
  WaitSlot& operator=(const WaitSlot&) = delete;
  WaitSlot& operator=(WaitSlot&&) = delete;
  ~WaitSlot() {
    if (open_) --*open_;
  }

 private:
  explicit WaitSlot(int64_t* open) : open_(open) { ++*open_; }
  int64_t* open_;
};

// Sleeps on `signal` until its next Notify(), `deadline`, or the client's
// socket turning readable (normally: it closed, and the caller, seeing
// req.PeerClosed(), drops the wait at once). A client that sends bytes
// during a wait (it should not) is from then on only checked at wake-ups,
// never spun on: `watch_client` goes false.
asio::awaitable<void> SleepOrPeer(Request& req, ChangeSignal& signal,
                                  ChangeSignal::Clock::time_point deadline, bool& watch_client);

}  // namespace agentd
