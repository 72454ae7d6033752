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
#include <optional>
#include <type_traits>

namespace agentd {

inline constexpr auto kUseNothrow = asio::experimental::as_tuple(asio::use_awaitable);

// The half of RunBlocking that does not depend on the callable or its
// result: a job whose Run() is called on the blocking pool and whose
// Resume() is then called on the caller's executor. Each RunBlocking
// instantiation only defines the two; the posting (Asio's operation types,
// their allocation and completion code) is compiled once, in
// sys/awaitable.cc, instead of twice per call site (about 100 KB of the
// release binary; docs/BUILDING.md, "Binary size").
class BlockingJob {
 public:
  virtual ~BlockingJob() = default;
  virtual void Run() = 0;
  virtual void Resume() = 0;
};

// Calls job->Run() on `pool`, then job->Resume() on `back`; the job is
// destroyed after Resume(), or unrun if the pool or `back` shuts down first.
void PostBlockingJob(asio::thread_pool& pool, asio::any_io_executor back,
                     std::unique_ptr<BlockingJob> job);

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
        using Handler = decltype(handler);
        class Job final : public BlockingJob {
         public:
          Job(std::shared_ptr<Fn> work, Handler handler)
              : work_(std::move(work)), handler_(std::move(handler)) {}
          void Run() override {
            result_.emplace((*work_)());
            // What `fn` held goes before the caller resumes (a temporary
            // file it owned must be gone when the caller answers).
            work_.reset();
          }
          void Resume() override { std::move(handler_)(std::move(*result_)); }

         private:
          std::shared_ptr<Fn> work_;
          Handler handler_;
          std::optional<R> result_;
        };
        asio::any_io_executor back = asio::get_associated_executor(handler);
        PostBlockingJob(pool, std::move(back),
                        std::make_unique<Job>(std::move(work), std::move(handler)));
      },
      asio::use_awaitable);
}

}  // namespace agentd
