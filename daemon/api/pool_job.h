// PoolJob<R>: work started on a thread pool now and awaited later, so a
// coroutine can feed a job (through a ByteChannel) while it runs. Unlike
// RunBlocking (sys/awaitable.h), which suspends the caller at once.
//
// Start() and Wait() are called on the io executor; the job runs on the
// pool. The shared state keeps everything alive until both are done; the
// job's own captures are destroyed before its result is published.
#pragma once

#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <memory>
#include <mutex>
#include <optional>

namespace agentd {

template <typename R>
class PoolJob {
 public:
  template <typename Fn>
  static PoolJob Start(asio::thread_pool& pool, asio::any_io_executor io, Fn fn) {
    auto state = std::make_shared<State>(io);
    asio::post(pool, [state, fn = std::optional<Fn>(std::move(fn))]() mutable {
      R result = (*fn)();
      // What the job held (a temporary file, say) goes before the caller
      // resumes: an error answered right after Wait() must find it gone.
      fn.reset();
      {
        std::lock_guard lock(state->mu);
        state->result.emplace(std::move(result));
      }
      asio::post(state->io, [state] { state->timer.cancel(); });
    });
    return PoolJob(std::move(state));
  }

  // Resumes the caller (on the io executor) with the job's result.
  asio::awaitable<R> Wait() {
    for (;;) {
      {
        std::lock_guard lock(state_->mu);
        if (state_->result) co_return std::move(*state_->result);
      }
      // Nothing runs on the io thread between the check and the wait, so
      // the completion's cancel() cannot be lost.
      state_->timer.expires_at(asio::steady_timer::time_point::max());
      co_await state_->timer.async_wait(asio::experimental::as_tuple(asio::use_awaitable));
    }
  }

 private:
  struct State {
    explicit State(asio::any_io_executor ex) : io(ex), timer(ex) {}
    asio::any_io_executor io;
    asio::steady_timer timer;
    std::mutex mu;
    std::optional<R> result;
  };
  explicit PoolJob(std::shared_ptr<State> state) : state_(std::move(state)) {}

  std::shared_ptr<State> state_;
};

}  // namespace agentd
