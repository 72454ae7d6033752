// GCC 12 caveat for every coroutine in the daemon: a braced-init-list
// inside a co_await expression ("co_await f({a, b})") fails to compile
// ("array used as initializer"); build the container in a named variable.
//
// Shared coroutine vocabulary for the daemon: awaitable operations that
// report errors as values (a tuple starting with the error_code) instead of
// throwing, and a helper that runs blocking work on the blocking pool.
#pragma once

#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <functional>
#include <type_traits>

namespace agentd {

inline constexpr auto kUseNothrow = asio::experimental::as_tuple(asio::use_awaitable);

// Runs `fn` on `pool` (for work that may block on a disk: tar, large file
// writes, tree scans) and resumes the caller on its own executor with the
// result. `fn` must not touch io-thread state.
template <typename Fn>
asio::awaitable<std::invoke_result_t<Fn>> RunBlocking(asio::thread_pool& pool, Fn fn) {
  using R = std::invoke_result_t<Fn>;
  auto executor = co_await asio::this_coro::executor;
  // The initiation is a named object, not a lambda inside the co_await
  // expression: GCC 12 destroys such a temporary twice.
  auto initiation = [&pool, executor, fn = std::move(fn)](auto handler) mutable {
    asio::post(pool, [executor, fn = std::move(fn), handler = std::move(handler)]() mutable {
      R result = fn();
      asio::post(executor, [handler = std::move(handler), result = std::move(result)]() mutable {
        std::move(handler)(std::move(result));
      });
    });
  };
  R result = co_await asio::async_initiate<const decltype(asio::use_awaitable)&, void(R)>(
      std::move(initiation), asio::use_awaitable);
  co_return result;
}

}  // namespace agentd
