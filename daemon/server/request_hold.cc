#include "server/request_hold.h"

#include "sys/awaitable.h"

namespace agentd {
namespace {

enum class Kind { kNone, kHeld, kCounted };

Kind KindOf(std::string_view method, std::string_view pattern) {
  if (method == "PUT" && pattern == "/v1/execs/{id}") return Kind::kHeld;
  if (method != "POST") return Kind::kNone;
  if (pattern == "/v1/run" || pattern == "/v1/reset" || pattern == "/v1/contexts" ||
      pattern == "/v1/contexts/{id}/run" || pattern == "/v1/contexts/{id}/reset") {
    return Kind::kCounted;
  }
  return Kind::kNone;
}

}  // namespace

bool RequestHold::Concerns(std::string_view method, std::string_view pattern) {
  return KindOf(method, pattern) != Kind::kNone;
}

asio::awaitable<std::shared_ptr<void>> RequestHold::Enter(std::string_view method,
                                                          std::string_view pattern,
                                                          std::string_view path) {
  Kind kind = KindOf(method, pattern);
  if (kind == Kind::kNone) co_return nullptr;
  if (pending_) {
    ++held_;
    // Woken only by SetPending(false) (the timer never expires); a new
    // upgrade pending by then holds it again.
    while (pending_) co_await release_.async_wait(kUseNothrow);
    --held_;
  }
  if (kind != Kind::kCounted) co_return nullptr;
  std::list<Entry>& list = state_->in_flight;
  list.push_back({std::string(method) + " " + std::string(path), std::chrono::steady_clock::now()});
  co_return std::shared_ptr<void>(nullptr, [state = state_, it = std::prev(list.end())](void*) {
    state->in_flight.erase(it);
    if (state->on_leave) state->on_leave();
  });
}

void RequestHold::SetPending(bool pending) {
  pending_ = pending;
  if (!pending) release_.cancel();
}

std::optional<BusyReason> RequestHold::Oldest() const {
  const std::list<Entry>& list = state_->in_flight;
  if (list.empty()) return std::nullopt;
  return BusyReason{"the request " + list.front().what, list.front().since, true};
}

}  // namespace agentd
