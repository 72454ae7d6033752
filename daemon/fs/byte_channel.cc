#include "fs/byte_channel.h"

#include <asio/experimental/as_tuple.hpp>

namespace agentd {

ByteChannel::ByteChannel(asio::any_io_executor io, size_t capacity)
    : io_(io), timer_(io), capacity_(capacity) {}

void ByteChannel::WakeIoLocked() {
  if (!io_waiting_) return;
  io_waiting_ = false;
  asio::post(io_, [self = shared_from_this()] { self->timer_.cancel(); });
}

asio::awaitable<void> ByteChannel::WaitIo() {
  // Runs on the io thread: nothing can run between the caller's unlock and
  // this wait, so a wake-up posted meanwhile arrives after the wait began.
  timer_.expires_at(asio::steady_timer::time_point::max());
  co_await timer_.async_wait(asio::experimental::as_tuple(asio::use_awaitable));
}

asio::awaitable<bool> ByteChannel::AsyncPush(std::string_view bytes) {
  std::string copy(bytes);
  co_return co_await AsyncPush(std::move(copy));
}

asio::awaitable<bool> ByteChannel::AsyncPush(std::string&& bytes) {
  if (bytes.empty()) co_return !closed();  // an empty chunk would read as the end
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (closed_) co_return false;
      if (queued_bytes_ < capacity_) {
        queued_bytes_ += bytes.size();
        queue_.push_back(std::move(bytes));
        cv_.notify_all();
        co_return true;
      }
      io_waiting_ = true;
    }
    co_await WaitIo();
  }
}

asio::awaitable<std::optional<std::string>> ByteChannel::AsyncPop() {
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (closed_) co_return std::nullopt;
      if (!queue_.empty()) {
        std::string out = std::move(queue_.front());
        queue_.pop_front();
        queued_bytes_ -= out.size();
        cv_.notify_all();
        co_return out;
      }
      if (finished_) co_return std::nullopt;
      io_waiting_ = true;
    }
    co_await WaitIo();
  }
}

bool ByteChannel::Push(std::string bytes) {
  if (bytes.empty()) return !closed();  // an empty chunk would read as the end
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return closed_ || queued_bytes_ < capacity_; });
  if (closed_) return false;
  queued_bytes_ += bytes.size();
  queue_.push_back(std::move(bytes));
  WakeIoLocked();
  return true;
}

std::optional<std::string> ByteChannel::Pop() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return closed_ || finished_ || !queue_.empty(); });
  if (closed_ || queue_.empty()) return std::nullopt;
  std::string out = std::move(queue_.front());
  queue_.pop_front();
  queued_bytes_ -= out.size();
  WakeIoLocked();
  return out;
}

void ByteChannel::Recycle(std::string used) {
  std::lock_guard lock(mu_);
  if (closed_ || spare_bytes_ + used.capacity() > kSpareFactor * capacity_) return;  // freed
  spare_bytes_ += used.capacity();
  spares_.push_back(std::move(used));
}

std::string ByteChannel::TakeSpare() {
  std::lock_guard lock(mu_);
  if (spares_.empty()) return std::string();
  std::string out = std::move(spares_.back());
  spares_.pop_back();
  spare_bytes_ -= out.capacity();
  return out;
}

void ByteChannel::Finish() {
  std::lock_guard lock(mu_);
  finished_ = true;
  cv_.notify_all();
  WakeIoLocked();
}

void ByteChannel::Close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  queue_.clear();
  queued_bytes_ = 0;
  spares_.clear();
  spare_bytes_ = 0;
  cv_.notify_all();
  WakeIoLocked();
}

bool ByteChannel::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

Result<std::string_view> ByteChannel::Source::Read() {
  if (current_.capacity() > 0) ch_->Recycle(std::move(current_));
  current_ = std::string();
  std::optional<std::string> next = ch_->Pop();
  if (!next) {
    if (ch_->closed()) {
      return Status::Error(ErrorCode::kTransport, "the request body ended early");
    }
    current_.clear();
    return std::string_view();
  }
  current_ = std::move(*next);
  return std::string_view(current_);
}

Status ByteChannel::Sink::Write(std::string_view bytes) {
  std::string copy = ch_->TakeSpare();
  copy.assign(bytes);
  return WriteOwned(std::move(copy));
}

Status ByteChannel::Sink::WriteOwned(std::string&& bytes) {
  if (bytes.empty()) return Status::Ok();
  if (!ch_->Push(std::move(bytes))) {
    return Status::Error(ErrorCode::kTransport, "the client stopped reading");
  }
  return Status::Ok();
}

std::shared_ptr<ByteChannel> ChannelRegistry::Make(asio::any_io_executor io, size_t capacity) {
  auto ch = std::make_shared<ByteChannel>(io, capacity);
  std::lock_guard lock(mu_);
  if (closed_) ch->Close();
  std::erase_if(channels_, [](const std::weak_ptr<ByteChannel>& w) { return w.expired(); });
  channels_.push_back(ch);
  return ch;
}

void ChannelRegistry::CloseAll() {
  std::lock_guard lock(mu_);
  closed_ = true;
  for (auto& w : channels_) {
    if (auto ch = w.lock()) ch->Close();
  }
}

}  // namespace agentd
