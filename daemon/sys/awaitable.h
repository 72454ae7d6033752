// GCC 12 caveats for every coroutine in the daemon:
// - A braced-init-list inside a co_await expression ("co_await f({a, b})")
//   fails to compile ("array used as initializer"); build the container in
//   a named variable.
// - A lambda or aggregate temporary created inside a co_await expression
//   ("co_await RunBlocking(pool, [s] { ... })", "co_await f(Agg{x})") can
//   be destroyed twice, or copied bit by bit: a captured std::string or
//   shared_ptr then corrupts the heap. Name the lambda or aggregate in a
//   local variable first and pass that. (Verified with ASan on g++ 12.2.)
// - "if (!(co_await f()).ok()) co_return;" and "if (!co_await g())
//   co_return;" can compile to an illegal instruction (ud2) in a coroutine
//   returning awaitable<void>; put the awaited value in a named variable
//   first and test that.
//
// Shared coroutine vocabulary for the daemon: awaitable operations that
// report errors as values (a tuple starting with the error_code) instead of
// throwing, and a helper that runs blocking work on the blocking pool.
#pragma once

#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <functional>
#include <memory>
#include <type_traits>

namespace agentd {

inline constexpr auto kUseNothrow = asio::experimental::as_tuple(asio::use_awaitable);

// Runs `fn` on `pool` (for work that may block on a disk: tar, large file
// writes, tree scans) and resumes the caller on its own executor with the
// result. `fn` must not touch io-thread state. Not a coroutine itself: a
// coroutine here would put its initiation lambda in a co_await expression
// (see the caveat above). Callers pass a named callable.
template <typename Fn>
asio::awaitable<std::invoke_result_t<Fn>> RunBlocking(asio::thread_pool& pool, Fn fn) {
  using R = std::invoke_result_t<Fn>;
  auto work = std::make_shared<Fn>(std::move(fn));
  return asio::async_initiate<const decltype(asio::use_awaitable)&, void(R)>(
      [&pool, work = std::move(work)](auto handler) mutable {
        auto executor = asio::get_associated_executor(handler);
        asio::post(
            pool, [executor, work = std::move(work), handler = std::move(handler)]() mutable {
              R result = (*work)();
              // What `fn` held goes before the caller resumes (a temporary file
              // it owned must be gone when the caller answers).
              work.reset();
              asio::post(executor,
                         [handler = std::move(handler), result = std::move(result)]() mutable {
                           std::move(handler)(std::move(result));
                         });
            });
      },
      asio::use_awaitable);
}

}  // namespace agentd
