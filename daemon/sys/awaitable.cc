#include "sys/awaitable.h"

namespace agentd {

void PostBlockingJob(asio::thread_pool& pool, asio::any_io_executor back,
                     std::unique_ptr<BlockingJob> job) {
  asio::post(pool, [back = std::move(back), job = std::move(job)]() mutable {
    job->Run();
    asio::post(back, [job = std::move(job)]() mutable { job->Resume(); });
  });
}

}  // namespace agentd
