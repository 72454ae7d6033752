// Client: the agentd client library's blocking face.
//
// Each call runs to completion on the calling thread (it drives a private
// io_context) and returns Result<T>: a value, or a Status carrying the
// daemon's stable error code, HTTP status, message and details; failures
// that never got an answer are transport_error or deadline_exceeded.
// Idempotent calls are retried (see ClientOptions and docs/CLIENT.md).
//
// Thread-safety: one call at a time per Client (use one Client per thread,
// or AsyncClient to multiplex many guests on one thread).
#pragma once

#include <asio.hpp>
#include <optional>

#include "agentd/client/async_client.h"

namespace agentd::client {

class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();

  const ClientOptions& options() const { return async_.options(); }
  void SetToken(std::string token) { async_.SetToken(std::move(token)); }

  Result<HealthResponse> Health() { return Wait(async_.Health()); }
  Result<std::string> Metrics(size_t max_bytes = kMetricsMaxBytes) {
    return Wait(async_.Metrics(max_bytes));
  }
  Result<ResetReport> Reset(ResetRequest request) { return Wait(async_.Reset(std::move(request))); }
  Result<BootstrapResponse> Bootstrap(BootstrapRequest request) {
    return Wait(async_.Bootstrap(std::move(request)));
  }

  Result<ExecInfo> StartExec(std::string id, ExecStartRequest request) {
    return Wait(async_.StartExec(std::move(id), std::move(request)));
  }
  Result<ExecPollResponse> PollExec(std::string id, PollOptions options = {}) {
    return Wait(async_.PollExec(std::move(id), options));
  }
  Result<ExecPollResponse> StartExecAndWait(std::string id, ExecStartRequest request,
                                            PollOptions options) {
    return Wait(async_.StartExecAndWait(std::move(id), std::move(request), options));
  }
  Result<ExecInfo> WaitExec(std::string id, std::chrono::milliseconds timeout) {
    return Wait(async_.WaitExec(std::move(id), timeout));
  }
  Result<ExecPollResponse> WaitForOutput(std::string id, std::string pattern,
                                         WaitForOutputOptions options = {}) {
    return Wait(async_.WaitForOutput(std::move(id), std::move(pattern), options));
  }
  Result<bool> WaitForPort(uint16_t port,
                           std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
    return Wait(async_.WaitForPort(port, timeout));
  }
  Result<bool> WaitForPath(std::string path, bool gone,
                           std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
    return Wait(async_.WaitForPath(std::move(path), gone, timeout));
  }
  Result<ExecInfo> KillExec(std::string id, KillRequest request = {}) {
    return Wait(async_.KillExec(std::move(id), std::move(request)));
  }
  Result<ExecInfo> AckExec(std::string id) { return Wait(async_.AckExec(std::move(id))); }
  Result<EgressReport> ExecEgress(std::string id) { return Wait(async_.ExecEgress(std::move(id))); }
  Result<std::vector<ExecInfo>> ListExecs() { return Wait(async_.ListExecs()); }
  Result<uint64_t> WriteStdin(std::string id, uint64_t offset, std::string bytes,
                              bool eof = false) {
    return Wait(async_.WriteStdin(std::move(id), offset, std::move(bytes), eof));
  }
  // Callbacks run on the calling thread.
  Result<ExecInfo> Stream(std::string id, StreamCursors cursors, StreamCallbacks callbacks) {
    return Wait(async_.Stream(std::move(id), cursors, std::move(callbacks)));
  }
  Result<RunResponse> RunCode(RunRequest request) {
    return Wait(async_.RunCode(std::move(request)));
  }
  Result<ContextInfo> CreateContext(ContextCreateRequest request) {
    return Wait(async_.CreateContext(std::move(request)));
  }
  Result<RunResponse> RunInContext(std::string id, ContextRunRequest request) {
    return Wait(async_.RunInContext(std::move(id), std::move(request)));
  }
  Result<ContextInfo> GetContext(std::string id) { return Wait(async_.GetContext(std::move(id))); }
  Result<std::vector<ContextInfo>> ListContexts() { return Wait(async_.ListContexts()); }
  Result<ContextInfo> ResetContext(std::string id) {
    return Wait(async_.ResetContext(std::move(id)));
  }
  Result<ContextInfo> DeleteContext(std::string id) {
    return Wait(async_.DeleteContext(std::move(id)));
  }
  Result<ExecInfo> ResizeExec(std::string id, int rows, int cols) {
    return Wait(async_.ResizeExec(std::move(id), rows, cols));
  }
  Result<uint64_t> Watch(std::string path, WatchOptions options, WatchCallbacks callbacks) {
    return Wait(async_.Watch(std::move(path), options, std::move(callbacks)));
  }
  // The tunnel's socket belongs to this client's io_context: use its
  // blocking ReadSome/WriteAll from any one thread.
  Result<std::unique_ptr<Tunnel>> OpenTunnel(uint16_t port) {
    return Wait(async_.OpenTunnel(port));
  }
  Result<std::vector<GuestPort>> ListPorts() { return Wait(async_.ListPorts()); }
  Result<OutputChunk> ReadOutput(std::string id, std::string stream = "stdout", uint64_t start = 0,
                                 size_t max_bytes = kReadOutputMaxBytes) {
    return Wait(async_.ReadOutput(std::move(id), std::move(stream), start, max_bytes));
  }
  Result<RunResult> Run(ExecStartRequest request, RunOptions options = {}) {
    return Wait(async_.Run(std::move(request), std::move(options)));
  }

  Result<uint64_t> ReadFileTo(std::string path, ReadOptions options, ByteSink sink) {
    return Wait(async_.ReadFileTo(std::move(path), options, std::move(sink)));
  }
  Result<uint64_t> ReadFileToFd(std::string path, ReadOptions options, int fd,
                                ByteCounter progress = {}) {
    return Wait(async_.ReadFileToFd(std::move(path), options, fd, std::move(progress)));
  }
  Result<std::string> ReadFile(std::string path, ReadOptions options = {}) {
    return Wait(async_.ReadFile(std::move(path), options));
  }
  Result<TaggedContent> ReadFileWithEtag(std::string path, ReadOptions options = {}) {
    return Wait(async_.ReadFileWithEtag(std::move(path), options));
  }
  Result<FileStat> WriteFile(std::string path, std::string contents, WriteOptions options = {}) {
    return Wait(async_.WriteFile(std::move(path), std::move(contents), std::move(options)));
  }
  Result<FileStat> WriteFileFrom(std::string path, ByteSource source, WriteOptions options = {}) {
    return Wait(async_.WriteFileFrom(std::move(path), std::move(source), std::move(options)));
  }
  Result<FileStat> WriteFileFromFd(std::string path, int fd, uint64_t size,
                                   WriteOptions options = {}) {
    return Wait(async_.WriteFileFromFd(std::move(path), fd, size, std::move(options)));
  }
  Result<FileStat> Stat(std::string path, bool follow = false) {
    return Wait(async_.Stat(std::move(path), follow));
  }
  Result<ListResponse> ListDir(std::string path) { return Wait(async_.ListDir(std::move(path))); }
  Result<FileStat> MakeDir(MkdirRequest request) {
    return Wait(async_.MakeDir(std::move(request)));
  }
  Result<FileStat> Rename(RenameRequest request, Preconditions guard = {}) {
    return Wait(async_.Rename(std::move(request), std::move(guard)));
  }
  Result<DeleteResponse> Remove(std::string path, bool recursive = false,
                                std::optional<std::string> if_match = {}) {
    return Wait(async_.Remove(std::move(path), recursive, std::move(if_match)));
  }
  Result<EditResponse> Edit(EditRequest request) { return Wait(async_.Edit(std::move(request))); }
  Result<std::string> Realpath(std::string path) { return Wait(async_.Realpath(std::move(path))); }
  Result<SearchResult> Search(std::string path, std::string pattern, SearchOptions options = {}) {
    return Wait(async_.Search(std::move(path), std::move(pattern), std::move(options)));
  }
  Result<GlobResponse> Glob(std::string path, std::string pattern, WalkQuery query = {}) {
    return Wait(async_.Glob(std::move(path), std::move(pattern), std::move(query)));
  }

  Result<TreeStats> UploadDir(std::string local, std::string remote,
                              TarCompression compression = TarCompression::kNone) {
    return Wait(async_.UploadDir(std::move(local), std::move(remote), compression));
  }
  Result<TreeStats> DownloadDir(std::string remote, std::string local,
                                TarCompression compression = TarCompression::kNone) {
    return Wait(async_.DownloadDir(std::move(remote), std::move(local), compression));
  }

  AsyncClient& async() { return async_; }

 private:
  // The call's coroutine runs on driver_, an io_context with no sockets or
  // timers and so no reactor: a call that never suspends (one that waits
  // for its answers in poll(2), see Transport::set_blocking_waits) costs
  // no epoll_wait. Its sockets and timers are io_'s: while the coroutine
  // waits on one of them, io_ runs a handler at a time (and while it waits
  // for another thread, driver_ waits for what that thread posts). Afterwards io_ runs
  // what else was started on it (Client::async()) to its end, as before;
  // with nothing there that returns at once.
  template <typename T>
  Result<T> Wait(asio::awaitable<Result<T>> work) {
    std::optional<Result<T>> out;
    driver_.restart();
    detail::Launch(driver_.get_executor(), std::move(work),
                   [&out](Result<T> r) { out.emplace(std::move(r)); });
    for (;;) {
      driver_.poll();
      if (out || driver_.stopped()) break;
      io_.restart();
      // Nothing on io_: the coroutine waits for another thread (a tree
      // transfer's worker), whose answer is posted to driver_.
      if (io_.run_one() == 0) driver_.run_one();
    }
    io_.restart();
    io_.run();
    return out ? std::move(*out) : Result<T>(Status::Internal("call did not complete"));
  }

  asio::io_context io_;
  asio::io_context driver_;
  AsyncClient async_;
};

}  // namespace agentd::client
