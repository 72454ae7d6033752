#include "fs/background_hasher.h"

#include <system_error>

namespace agentd {

BackgroundHasher::~BackgroundHasher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  StopAndJoin();
}

void BackgroundHasher::StopAndJoin() {
  {
    std::lock_guard lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BackgroundHasher::Add(std::string block) {
  if (blocks_ < 2 && ++blocks_ == 2) {
    try {
      thread_ = std::thread([this] { Run(); });
      threaded_ = true;
    } catch (const std::system_error&) {
      // No thread: every block is hashed in line.
    }
  }
  if (!threaded_) {
    hasher_.Update(block);
    recycle_(std::move(block));
    return;
  }
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return queue_.size() < kHashQueueBlocks; });
  queue_.push_back(std::move(block));
  cv_.notify_all();
}

void BackgroundHasher::Run() {
  for (;;) {
    std::string block;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return !queue_.empty() || done_; });
      if (stop_ || queue_.empty()) return;
      block = std::move(queue_.front());
      queue_.pop_front();
    }
    cv_.notify_all();  // room for the writer's next block
    hasher_.Update(block);
    recycle_(std::move(block));
  }
}

std::string BackgroundHasher::Finish() {
  StopAndJoin();
  return hasher_.Finish();
}

}  // namespace agentd
