// RequestHold: the requests that start work an upgrade in place cannot
// hand over midway (docs/OPERATIONS.md, "Upgrading"), seen by the router.
//
// While an upgrade is pending (it waits for the daemon to be quiet of such
// work) a new request of these kinds waits here, before its handler runs:
// otherwise a steady stream of short runs would keep the daemon busy and
// the upgrade would never find its moment. The wait is bounded by the
// upgrade's own (--upgrade-wait-ms, then the new binary's check): if the
// upgrade fails the request proceeds on this daemon; if it takes effect the
// request's connection closes at the execve before anything started (a
// retry-safe request is retried by the clients and runs on the new binary).
// Held requests are bounded by the connections the server accepts.
//
// The kinds: an exec's start (held only: its launch is the engine's to
// report, and a start-and-wait request may go on for as long as the exec
// runs), and, held and counted in flight until answered, a /v1/run, a
// context's create, run or reset, and a guest reset. Used on the io thread.
#pragma once

#include <asio.hpp>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sys/busy_reason.h"

namespace agentd {

class RequestHold {
 public:
  explicit RequestHold(asio::io_context& io)
      : release_(io, asio::steady_timer::time_point::max()), state_(std::make_shared<State>()) {}
  // A token dropped later (a handler's frame destroyed with the io
  // context) no longer calls back.
  ~RequestHold() { state_->on_leave = nullptr; }
  RequestHold(const RequestHold&) = delete;
  RequestHold& operator=(const RequestHold&) = delete;

  // Whether Enter() has anything to do for (method, route pattern): most
  // requests skip it, and its coroutine frame.
  static bool Concerns(std::string_view method, std::string_view pattern);
  // For a request matched to (method, route pattern): waits while an
  // upgrade is pending, then, for the kinds counted, returns a token that
  // keeps the request in flight until dropped (null for every other).
  asio::awaitable<std::shared_ptr<void>> Enter(std::string_view method, std::string_view pattern,
                                               std::string_view path);
  // Pending holds new requests; not pending releases every held one.
  void SetPending(bool pending);
  // The longest in flight of the kinds counted.
  std::optional<BusyReason> Oldest() const;
  // Called each time a counted request answered (the upgrade looks again).
  void OnLeave(std::function<void()> f) { state_->on_leave = std::move(f); }
  int64_t held() const { return held_; }

 private:
  struct Entry {
    std::string what;
    std::chrono::steady_clock::time_point since;
  };
  // Shared with the tokens, which may outlive the hold.
  struct State {
    std::list<Entry> in_flight;  // oldest first
    std::function<void()> on_leave;
  };
  asio::steady_timer release_;  // never expires: cancelled to release
  bool pending_ = false;
  int64_t held_ = 0;
  std::shared_ptr<State> state_;
};

}  // namespace agentd
