#include "exec/change_signal.h"

namespace agentd {

asio::awaitable<void> ChangeSignal::Wait(Clock::time_point deadline) {
  asio::steady_timer timer(co_await asio::this_coro::executor, deadline);
  Registration reg(*this, &timer);
  co_await timer.async_wait(kUseNothrow);
}

}  // namespace agentd
