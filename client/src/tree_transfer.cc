#include "tree_transfer.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <asio/experimental/concurrent_channel.hpp>
#include <chrono>
#include <cstring>
#include <thread>

#include "agentd/client/nothrow.h"
#include "agentd/protocol/json.h"
#include "agentd/protocol/percent.h"
#include "tree_archive.h"

namespace agentd::client {
namespace {

using ResultChannel =
    asio::experimental::concurrent_channel<void(asio::error_code, Result<TreeStats>)>;

std::string_view CompressionName(TarCompression c) {
  switch (c) {
    case TarCompression::kGzip:
      return "gzip";
    case TarCompression::kZstd:
      return "zstd";
    case TarCompression::kNone:
      return "none";
  }
  return "none";
}

// A worker thread running `work()`; its result arrives on a channel so a
// coroutine can await it without blocking the executor.
class Worker {
 public:
  template <typename Work>
  Worker(asio::any_io_executor ex, Work work) : channel_(ex, 1) {
    thread_ = std::thread([this, work = std::move(work)]() mutable {
      // A closed pipe must be an EPIPE error here, not a process-killing
      // SIGPIPE; a signal left pending on this thread dies with it.
      sigset_t pipe_only;
      sigemptyset(&pipe_only);
      sigaddset(&pipe_only, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe_only, nullptr);
      Result<TreeStats> r = work();
      channel_.try_send(asio::error_code(), std::move(r));
    });
  }
  ~Worker() {
    if (thread_.joinable()) thread_.join();
  }
  asio::awaitable<Result<TreeStats>> Wait() {
    auto [ec, r] = co_await channel_.async_receive(kNothrow);
    if (thread_.joinable()) thread_.join();
    if (ec) co_return Status::Internal("tree worker lost: " + ec.message());
    co_return std::move(r);
  }

 private:
  ResultChannel channel_;
  std::thread thread_;
};

// A download's body as the extractor's source: the worker thread reads the
// socket itself (blocking, the deadline bounding each wait) and extracts
// from the connection's buffer where the bytes landed, as `tar x` reads its
// stdin. Handing blocks from the io thread cost a wake-up of each thread
// per block; a pipe between them, two more copies of every byte
// (docs/BENCHMARKS.md, "Tree download: where the time went").
class BodySource : public ByteSource {
 public:
  BodySource(ResponseStream& stream, std::chrono::milliseconds timeout, Status& transfer)
      : stream_(stream), timeout_(timeout), transfer_(transfer) {}
  Result<std::string_view> Read() override {
    Result<std::string_view> chunk = stream_.ReadBlocking(Clock::now() + timeout_);
    if (!chunk.ok()) transfer_ = chunk.status();
    return chunk;
  }

 private:
  ResponseStream& stream_;
  std::chrono::milliseconds timeout_;
  Status& transfer_;
};

Status PipeError() {
  return Status::Error(ErrorCode::kIoError,
                       std::string("cannot create a pipe: ") + strerror(errno));
}

// A pipe that holds a few of the worker's blocks, so the two threads hand
// over whole blocks rather than waking each other per 64 KiB. Best effort
// (a lower pipe-max-size keeps the default).
int MakeTreePipe(int fds[2]) {
  if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
  ::fcntl(fds[0], F_SETPIPE_SZ, 4 * kPipeBlockBytes);
  return 0;
}

asio::awaitable<Result<TreeStats>> UploadOnce(Transport& transport, const std::string& local,
                                              const std::string& remote,
                                              TarCompression compression) {
  int fds[2];
  if (MakeTreePipe(fds) != 0) co_return PipeError();
  asio::posix::stream_descriptor reader(transport.executor(), fds[0]);
  Worker worker(transport.executor(), [fd = fds[1], local, compression]() {
    Result<TreeStats> r = WriteTreeTar(local, fd, compression);
    ::close(fd);
    return r;
  });
  std::vector<char> buf(kPipeBlockBytes);
  bool worker_done = false;
  Result<TreeStats> local_result;
  HttpRequest req;
  req.method = "PUT";
  req.target = "/v1/fs/tar?path=" + PercentEncode(remote, /*keep_slash=*/true);
  req.content_type = "application/x-tar";
  req.source = [&]() -> asio::awaitable<Result<std::string_view>> {
    auto [ec, n] = co_await reader.async_read_some(asio::buffer(buf), kNothrow);
    if (!ec) co_return std::string_view(buf.data(), n);
    // End of the archive: send the final chunk only if it was built whole,
    // so a local failure can never commit a partial tree remotely.
    local_result = co_await worker.Wait();
    worker_done = true;
    if (!local_result.ok()) co_return local_result.status();
    co_return std::string_view();
  };
  Result<HttpResponse> response = co_await transport.Call(req);
  asio::error_code ignored;
  reader.close(ignored);  // unblocks a worker still writing
  if (!worker_done) local_result = co_await worker.Wait();
  // A daemon that refused early stopped reading; the worker's broken pipe
  // is a consequence, not the cause.
  if (!response.ok() && !(worker_done && !local_result.ok())) co_return response.status();
  if (!local_result.ok()) co_return local_result.status();
  Result<json::Value> doc = json::Parse(response->body);
  if (!doc.ok())
    co_return Status::Error(ErrorCode::kProtocolError, "tar upload answer is not JSON");
  TreeStats stats = *local_result;
  if (const json::Value* e = doc->Find("entries"); e && e->is_int()) {
    stats.entries = static_cast<uint64_t>(e->as_int());
  }
  co_return stats;
}

asio::awaitable<Result<TreeStats>> DownloadOnce(Transport& transport, const std::string& remote,
                                                const std::string& local,
                                                TarCompression compression) {
  HttpRequest req;
  req.target = "/v1/fs/tar?path=" + PercentEncode(remote, /*keep_slash=*/true) +
               "&compress=" + std::string(CompressionName(compression));
  req.idempotent = true;
  Result<std::unique_ptr<ResponseStream>> stream = co_await transport.Open(req);
  if (!stream.ok()) co_return stream.status();
  // The coroutine only waits for the worker: the stream is the worker's
  // alone until it returns.
  Status transfer;
  Worker worker(transport.executor(), [&stream, &transfer, &transport, local]() {
    BodySource source(**stream, transport.options().request_timeout, transfer);
    return ExtractTreeTar(source, local);
  });
  Result<TreeStats> extracted = co_await worker.Wait();
  if (!transfer.ok()) co_return transfer;
  co_return extracted;
}

using TransferOnce = asio::awaitable<Result<TreeStats>> (*)(Transport&, const std::string&,
                                                            const std::string&, TarCompression);

// A whole transfer, started again from scratch (the archive rebuilt, a
// fresh staging directory) after a failure the retry policy allows.
asio::awaitable<Result<TreeStats>> Restarting(TransferOnce once, Transport& transport,
                                              const std::string& from, const std::string& to,
                                              TarCompression compression) {
  for (int attempt = 1;; ++attempt) {
    Result<TreeStats> r = co_await once(transport, from, to, compression);
    if (r.ok() || attempt >= transport.options().max_attempts || !IsRetryableFailure(r.status()))
      co_return r;
    asio::steady_timer t(transport.executor(), transport.Backoff(attempt));
    co_await t.async_wait(kNothrow);
  }
}

}  // namespace

asio::awaitable<Result<TreeStats>> UploadTree(Transport& transport, std::string local,
                                              std::string remote, TarCompression compression) {
  co_return co_await Restarting(&UploadOnce, transport, local, remote, compression);
}

asio::awaitable<Result<TreeStats>> DownloadTree(Transport& transport, std::string remote,
                                                std::string local, TarCompression compression) {
  co_return co_await Restarting(&DownloadOnce, transport, remote, local, compression);
}

}  // namespace agentd::client
