// ByteChannel: a bounded byte queue between one coroutine on the io thread
// and one worker thread, in either direction: a request body streamed to a
// worker that writes the disk, or a worker's tar stream sent to a socket.
//
// The producer blocks (a thread) or suspends (a coroutine) while the queue
// holds `capacity` bytes or more, so memory stays bounded whatever the
// speeds. Either side can Close() to give up (an error, a refusal, a
// disconnect, daemon shutdown); the other side then sees the end with
// closed() true. Finish() is the producer's clean end of stream.
//
// The consumer can hand a drained buffer back (Recycle) and the producer
// take it for its next block (TakeSpare): a large upload then reuses the
// same few blocks instead of allocating one per block on the io thread and
// freeing it on the worker, which made glibc map, fault in and trim fresh
// pages for every block (measured: twice the daemon's CPU for a 1 GiB
// upload; docs/BENCHMARKS.md). Spares are bounded by the capacity too.
//
// Thread-safety: the Async* members run on the io executor given at
// construction; the blocking members on any other thread; Close() and the
// queries anywhere. Keep it in a shared_ptr: wake-ups posted to the io
// thread hold a reference.
#pragma once

#include <asio.hpp>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/trees/byte_stream.h"

namespace agentd {

class ByteChannel : public std::enable_shared_from_this<ByteChannel> {
 public:
  ByteChannel(asio::any_io_executor io, size_t capacity);

  // io side. AsyncPush: false once the channel is closed. The string
  // overload moves its buffer into the queue (no copy).
  asio::awaitable<bool> AsyncPush(std::string_view bytes);
  asio::awaitable<bool> AsyncPush(std::string&& bytes);
  // nullopt at the end (finished, or closed: ask closed()).
  asio::awaitable<std::optional<std::string>> AsyncPop();

  // Worker side.
  bool Push(std::string bytes);
  std::optional<std::string> Pop();

  // Buffer reuse, from either side: Recycle keeps `used` as it is (its
  // bytes stale, its size and capacity kept: a refill to the same size
  // overwrites them, with nothing to zero) while the spares hold less than
  // kSpareFactor times `capacity` bytes, else frees it; TakeSpare answers
  // a kept one, or an empty string. A taker that appends clears it first;
  // one that fills it in place (TarWriter) overwrites the stale bytes.
  // The factor covers every block an upload has in circulation at once
  // (the queue's, the writer's, the hasher's queue and its own: 12 of
  // 256 KiB for a 1 MiB channel): with fewer kept, the rest were freed
  // and allocated again, fresh pages faulted in and zeroed for each
  // (perf: the daemon's page faults during a 1 GiB upload).
  static constexpr size_t kSpareFactor = 4;
  void Recycle(std::string used);
  std::string TakeSpare();

  void Finish();
  void Close();
  bool closed() const;

  // Adapters for the blocking code.
  class Source : public ByteSource {
   public:
    explicit Source(std::shared_ptr<ByteChannel> ch) : ch_(std::move(ch)) {}
    Result<std::string_view> Read() override;

   private:
    std::shared_ptr<ByteChannel> ch_;
    std::string current_;
  };
  class Sink : public ByteSink {
   public:
    explicit Sink(std::shared_ptr<ByteChannel> ch) : ch_(std::move(ch)) {}
    Status Write(std::string_view bytes) override;
    Status WriteOwned(std::string&& bytes) override;
    std::string TakeBuffer() override { return ch_->TakeSpare(); }

   private:
    std::shared_ptr<ByteChannel> ch_;
  };

 private:
  // Wakes a coroutine waiting on timer_ (from any thread; mu_ held).
  void WakeIoLocked();
  asio::awaitable<void> WaitIo();

  asio::any_io_executor io_;
  asio::steady_timer timer_;  // io thread only
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  size_t queued_bytes_ = 0;
  std::vector<std::string> spares_;
  size_t spare_bytes_ = 0;  // their capacities
  bool finished_ = false;
  bool closed_ = false;
  bool io_waiting_ = false;
};

// Every live channel, so daemon shutdown can close them all and the worker
// threads blocked on them return (the pool can then be joined).
class ChannelRegistry {
 public:
  std::shared_ptr<ByteChannel> Make(asio::any_io_executor io, size_t capacity);
  void CloseAll();

 private:
  std::mutex mu_;
  std::vector<std::weak_ptr<ByteChannel>> channels_;
  bool closed_ = false;
};

}  // namespace agentd
