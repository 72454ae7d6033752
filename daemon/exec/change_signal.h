// ChangeSignal: wakes every coroutine waiting for "something changed" (new
// output, a state change) on one exec. A waiter sleeps on its own timer
// until its deadline; Notify() cancels every registered timer. There are no
// lost wake-ups as long as a waiter checks its condition and calls Wait()
// without an await in between (one io thread). Spurious wake-ups are
// possible; waiters re-check. Used only on the io thread.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <vector>

#include "sys/awaitable.h"

namespace agentd {

class ChangeSignal {
 public:
  using Clock = std::chrono::steady_clock;

  void Notify() {
    for (asio::steady_timer* t : waiters_) t->cancel();
  }

  // Returns at the next Notify() or at `deadline`, whichever comes first.
  // Out of line: a coroutine defined in a header gets a frame type per
  // translation unit, which link-time optimisation reports as an ODR clash.
  asio::awaitable<void> Wait(Clock::time_point deadline);

  size_t waiters() const { return waiters_.size(); }

 private:
  struct Registration {
    Registration(ChangeSignal& s, asio::steady_timer* t) : signal(s), timer(t) {
      signal.waiters_.push_back(timer);
    }
    ~Registration() { std::erase(signal.waiters_, timer); }
    ChangeSignal& signal;
    asio::steady_timer* timer;
  };

  std::vector<asio::steady_timer*> waiters_;
};

}  // namespace agentd
