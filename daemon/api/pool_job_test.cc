// The pool helpers (PoolJob here, RunBlocking in sys/awaitable.h) release
// what the job captured before the caller resumes. Regression: a chunked PUT
// that hit ENOSPC answered 507 while the pool thread still held the
// temporary file, so the test saw a leftover .agentd-tmp-* now and then.
#include "api/pool_job.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "sys/awaitable.h"

using namespace agentd;

namespace {

// Set when destroyed, late: the destructor first sleeps, so a helper that
// published its result before destroying the job would let the caller see
// "not yet" every time, not only under an unlucky schedule.
struct SlowToRelease {
  explicit SlowToRelease(std::atomic<bool>* flag) : gone(flag) {}
  SlowToRelease(SlowToRelease&& o) noexcept : gone(o.gone) { o.gone = nullptr; }
  SlowToRelease(const SlowToRelease& o) = delete;
  ~SlowToRelease() {
    if (!gone) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    gone->store(true);
  }
  std::atomic<bool>* gone;
};

template <typename Body>
void RunOnIo(Body body) {
  asio::io_context io;
  asio::thread_pool pool(1);
  asio::co_spawn(io, body(pool, io.get_executor()), asio::detached);
  io.run();
  pool.join();
}

}  // namespace

TEST_CASE("a PoolJob's captures are gone when Wait resumes the caller", "[pool]") {
  std::atomic<bool> gone{false};
  bool gone_at_resume = false;
  int result = 0;
  RunOnIo([&](asio::thread_pool& pool, asio::any_io_executor io) -> asio::awaitable<void> {
    auto job = PoolJob<int>::Start(pool, io, [held = SlowToRelease(&gone)] { return 7; });
    result = co_await job.Wait();
    gone_at_resume = gone.load();
  });
  CHECK(result == 7);
  CHECK(gone_at_resume);
}

TEST_CASE("RunBlocking's callable is gone when the caller resumes", "[pool]") {
  std::atomic<bool> gone{false};
  bool gone_at_resume = false;
  int result = 0;
  RunOnIo([&](asio::thread_pool& pool, asio::any_io_executor) -> asio::awaitable<void> {
    auto work = [held = SlowToRelease(&gone)] { return 9; };
    result = co_await RunBlocking(pool, std::move(work));
    gone_at_resume = gone.load();
  });
  CHECK(result == 9);
  CHECK(gone_at_resume);
}
