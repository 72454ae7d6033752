// AsyncClient: the agentd client library's asynchronous face.
//
// Every call exists in two forms:
//  - a coroutine, `asio::awaitable<Result<T>> Health()`, for code that is
//    already a coroutine on the client's executor;
//  - a completion-token form, `AsyncHealth(token)`, that works with any Asio
//    token: a callback `void(Result<T>)`, `asio::use_awaitable`,
//    `asio::use_future` (a std::future<Result<T>>), `asio::deferred`, ...
// So one thread can drive hundreds of guests, one AsyncClient each.
//
// No default arguments: a call that leaves trailing arguments out takes an
// overload that forwards them explicitly. GCC 12 miscompiles a default
// argument's temporary in a coroutine's co_await expression
// (`co_await client.Run(request)` died with "free(): invalid pointer" at
// -O2); async_defaults_test.cc calls every such overload.
//
// Thread-safety: an AsyncClient is used from its executor only (one strand);
// calls may overlap (each takes its own pooled connection). It must outlive
// the calls it started. Callbacks run on the executor.
#pragma once

#include <asio.hpp>
#include <exception>
#include <memory>
#include <string>

#include "agentd/client/exec.h"
#include "agentd/client/files.h"
#include "agentd/client/options.h"
#include "agentd/client/reactive.h"
#include "agentd/client/search.h"
#include "agentd/client/trees.h"
#include "agentd/protocol/bootstrap.h"
#include "agentd/protocol/context.h"
#include "agentd/protocol/reset.h"
#include "agentd/protocol/run.h"
#include "agentd/protocol/status.h"

namespace agentd::client {

class Transport;

namespace detail {

// Runs a coroutine on `ex` and completes `token` with its Result.
template <typename T, typename Token>
auto Launch(asio::any_io_executor ex, asio::awaitable<Result<T>> work, Token&& token) {
  return asio::async_initiate<Token, void(Result<T>)>(
      [ex](auto handler, asio::awaitable<Result<T>> w) mutable {
        asio::co_spawn(ex, std::move(w),
                       [h = std::move(handler)](std::exception_ptr e, Result<T> r) mutable {
                         if (e) {
                           try {
                             std::rethrow_exception(e);
                           } catch (const std::exception& x) {
                             r = Status::Internal(std::string("client failure: ") + x.what());
                           } catch (...) {
                             r = Status::Internal("client failure");
                           }
                         }
                         std::move(h)(std::move(r));
                       });
      },
      token, std::move(work));
}

}  // namespace detail

class AsyncClient {
 public:
  AsyncClient(asio::any_io_executor executor, ClientOptions options);
  ~AsyncClient();
  AsyncClient(const AsyncClient&) = delete;
  AsyncClient& operator=(const AsyncClient&) = delete;

  asio::any_io_executor executor() const { return executor_; }
  const ClientOptions& options() const;
  // Replaces the bearer token for later calls (a re-minted token).
  void SetToken(std::string token);

  // GET /v1/health (no auth needed).
  asio::awaitable<Result<HealthResponse>> Health();
  // GET /v1/metrics: the daemon's Prometheus text exposition (docs/PROTOCOL.md,
  // "Metrics"), at most `max_bytes` (more is protocol_error).
  asio::awaitable<Result<std::string>> Metrics(size_t max_bytes);
  asio::awaitable<Result<std::string>> Metrics() { return Metrics(kMetricsMaxBytes); }
  // POST /v1/bootstrap. Retried safely: a replay with the same token is
  // answered "replayed". On success the client uses the token from then on.
  asio::awaitable<Result<BootstrapResponse>> Bootstrap(BootstrapRequest request);
  // POST /v1/reset (docs/PROTOCOL.md, "Reuse"): the guest returned to a
  // clean state for the next tenant, or quarantined (report.clean false,
  // every remaining item named). Retried safely by request.reset_id (mint
  // one per reset), even after the reset retired this client's token. With
  // request.next and a clean report the client uses next.token from then on.
  asio::awaitable<Result<ResetReport>> Reset(ResetRequest request);

  // --- Exec (docs/CLIENT.md, "Exec") ---
  // PUT /v1/execs/{id}: starts `request` under the caller-minted `id`
  // (MintExecId). Retried safely: the same id and request answer the same
  // exec, never a second process.
  asio::awaitable<Result<ExecInfo>> StartExec(std::string id, ExecStartRequest request);
  // GET /v1/execs/{id}: read-only; with options.wait a long poll.
  asio::awaitable<Result<ExecPollResponse>> PollExec(std::string id, PollOptions options);
  asio::awaitable<Result<ExecPollResponse>> PollExec(std::string id) {
    return PollExec(std::move(id), PollOptions{});
  }
  // PUT /v1/execs/{id} with Poll's query ("Start and wait"): starts like
  // StartExec, answers like PollExec once started. A short command's exit
  // and output in one request: options.wait and until_exit, cursors at 0.
  asio::awaitable<Result<ExecPollResponse>> StartExecAndWait(std::string id,
                                                             ExecStartRequest request,
                                                             PollOptions options);
  // Long-polls until the exec has exited or `timeout` passes (deadline_exceeded).
  asio::awaitable<Result<ExecInfo>> WaitExec(std::string id, std::chrono::milliseconds timeout);
  // GET /v1/execs/{id}?until=match: waits until the PCRE2 `pattern`
  // matches the exec's output (across output chunks), in long-poll rounds
  // that resume from the daemon's cursor. The answer's `match` is the
  // match, or says why there is none ("exited", or "timeout" once
  // options.timeout passed). Read-only.
  asio::awaitable<Result<ExecPollResponse>> WaitForOutput(std::string id, std::string pattern,
                                                          WaitForOutputOptions options);
  asio::awaitable<Result<ExecPollResponse>> WaitForOutput(std::string id, std::string pattern) {
    return WaitForOutput(std::move(id), std::move(pattern), WaitForOutputOptions{});
  }
  asio::awaitable<Result<ExecInfo>> KillExec(std::string id, KillRequest request);
  asio::awaitable<Result<ExecInfo>> KillExec(std::string id) {
    return KillExec(std::move(id), KillRequest{});
  }
  asio::awaitable<Result<ExecInfo>> AckExec(std::string id);
  // GET /v1/execs/{id}/egress (docs/PROTOCOL.md, "Egress").
  asio::awaitable<Result<EgressReport>> ExecEgress(std::string id);
  asio::awaitable<Result<std::vector<ExecInfo>>> ListExecs();
  // Writes stdin bytes starting at stdin offset `offset`; answers the
  // daemon's next offset. Retried safely (bytes already taken are skipped).
  asio::awaitable<Result<uint64_t>> WriteStdin(std::string id, uint64_t offset, std::string bytes,
                                               bool eof);
  asio::awaitable<Result<uint64_t>> WriteStdin(std::string id, uint64_t offset, std::string bytes) {
    return WriteStdin(std::move(id), offset, std::move(bytes), false);
  }
  // Streams output from `cursors` until the exec's exit event, reconnecting
  // with Last-Event-ID after a lost connection (bounded, jittered backoff):
  // every byte is delivered exactly once, in order. Answers the final exec
  // object. A fresh client given only the id and saved cursors resumes
  // exactly where an earlier one stopped.
  asio::awaitable<Result<ExecInfo>> Stream(std::string id, StreamCursors cursors,
                                           StreamCallbacks callbacks);
  // POST /v1/execs/{id}/resize: a PTY exec's terminal size (SIGWINCH).
  asio::awaitable<Result<ExecInfo>> ResizeExec(std::string id, int rows, int cols);
  // GET /v1/execs/{id}/stdout|stderr (no follow): the bytes of `stream`
  // ("stdout" or "stderr") the daemon retains from offset `start`, at
  // most `max_bytes` (a longer answer is protocol_error; read on from
  // `next`). `gap` is set when bytes from `start` on are no longer retained.
  asio::awaitable<Result<OutputChunk>> ReadOutput(std::string id, std::string stream,
                                                  uint64_t start, size_t max_bytes);
  asio::awaitable<Result<OutputChunk>> ReadOutput(std::string id, std::string stream,
                                                  uint64_t start) {
    return ReadOutput(std::move(id), std::move(stream), start, kReadOutputMaxBytes);
  }
  asio::awaitable<Result<OutputChunk>> ReadOutput(std::string id, std::string stream) {
    return ReadOutput(std::move(id), std::move(stream), 0, kReadOutputMaxBytes);
  }
  asio::awaitable<Result<OutputChunk>> ReadOutput(std::string id) {
    return ReadOutput(std::move(id), "stdout", 0, kReadOutputMaxBytes);
  }
  // Start, stream, wait, ack: the blocking convenience of harnesses.
  asio::awaitable<Result<RunResult>> Run(ExecStartRequest request, RunOptions options);
  asio::awaitable<Result<RunResult>> Run(ExecStartRequest request) {
    return Run(std::move(request), RunOptions{});
  }
  // POST /v1/run (docs/PROTOCOL.md, "Run code"): one code action to
  // completion. Never retried (it runs code); the per-attempt deadline
  // grows by the run's timeout (300 s when unset) plus 30 s for the scans.
  asio::awaitable<Result<RunResponse>> RunCode(RunRequest request);

  // --- Contexts (docs/PROTOCOL.md, "Contexts") ---
  // POST /v1/contexts: a persistent interpreter; retried safely (the same
  // id and request answer the same context).
  asio::awaitable<Result<ContextInfo>> CreateContext(ContextCreateRequest request);
  // POST /v1/contexts/{id}/run, answered like RunCode. A run_id is minted
  // when the request has none, so a retry replays instead of running twice.
  asio::awaitable<Result<RunResponse>> RunInContext(std::string id, ContextRunRequest request);
  asio::awaitable<Result<ContextInfo>> GetContext(std::string id);
  asio::awaitable<Result<std::vector<ContextInfo>>> ListContexts();
  // A fresh interpreter with the context's create request.
  asio::awaitable<Result<ContextInfo>> ResetContext(std::string id);
  asio::awaitable<Result<ContextInfo>> DeleteContext(std::string id);

  // --- Files (docs/CLIENT.md, "Files") ---
  // GET /v1/fs/file into `sink` as it arrives (whole, lines, or a byte
  // range); answers the byte count. Memory stays flat for any size.
  asio::awaitable<Result<uint64_t>> ReadFileTo(std::string path, ReadOptions options,
                                               ByteSink sink);
  // The same into the open descriptor `fd` (written from its offset; not
  // closed). A Content-Length answer moves socket -> pipe -> fd by
  // splice(2), never through this process's memory; a descriptor splice
  // cannot write (O_APPEND, a tty) or a chunked answer gets the same bytes
  // by recv and write(2). `progress` (may be empty) hears each batch
  // written. A failure to write `fd` is io_error.
  asio::awaitable<Result<uint64_t>> ReadFileToFd(std::string path, ReadOptions options, int fd,
                                                 ByteCounter progress = {});
  // The same into a string, refused beyond options.max_bytes.
  asio::awaitable<Result<std::string>> ReadFile(std::string path, ReadOptions options);
  asio::awaitable<Result<std::string>> ReadFile(std::string path) {
    return ReadFile(std::move(path), ReadOptions{});
  }
  // The same with the ETag of exactly the bytes read: pass it back as
  // Preconditions::if_match (or EditRequest::if_match) so a write lands
  // only on the version that was read.
  asio::awaitable<Result<TaggedContent>> ReadFileWithEtag(std::string path, ReadOptions options);
  asio::awaitable<Result<TaggedContent>> ReadFileWithEtag(std::string path) {
    return ReadFileWithEtag(std::move(path), ReadOptions{});
  }
  // PUT /v1/fs/file: atomic replace with exactly options.mode. Retried
  // safely unless options.guard holds a precondition.
  asio::awaitable<Result<FileStat>> WriteFile(std::string path, std::string contents,
                                              WriteOptions options);
  asio::awaitable<Result<FileStat>> WriteFile(std::string path, std::string contents) {
    return WriteFile(std::move(path), std::move(contents), WriteOptions{});
  }
  // The same from a streaming source (never retried once started).
  asio::awaitable<Result<FileStat>> WriteFileFrom(std::string path, ByteSource source,
                                                  WriteOptions options);
  asio::awaitable<Result<FileStat>> WriteFileFrom(std::string path, ByteSource source) {
    return WriteFileFrom(std::move(path), std::move(source), WriteOptions{});
  }
  // The same from the first `size` bytes of the open regular file `fd`
  // (not closed here), sent with Content-Length by sendfile(2): the bytes
  // never pass through this process, and the daemon checks free space
  // before it reads them. Retried like WriteFile (from the start again).
  asio::awaitable<Result<FileStat>> WriteFileFromFd(std::string path, int fd, uint64_t size,
                                                    WriteOptions options);
  asio::awaitable<Result<FileStat>> Stat(std::string path, bool follow);
  asio::awaitable<Result<FileStat>> Stat(std::string path) { return Stat(std::move(path), false); }
  asio::awaitable<Result<ListResponse>> ListDir(std::string path);
  asio::awaitable<Result<FileStat>> MakeDir(MkdirRequest request);
  // `guard.if_match` applies to `from`, `guard.if_none_match` to `to`.
  asio::awaitable<Result<FileStat>> Rename(RenameRequest request, Preconditions guard);
  asio::awaitable<Result<FileStat>> Rename(RenameRequest request) {
    return Rename(std::move(request), Preconditions{});
  }
  // With `if_match` only that version of the file is removed.
  asio::awaitable<Result<DeleteResponse>> Remove(std::string path, bool recursive,
                                                 std::optional<std::string> if_match);
  asio::awaitable<Result<DeleteResponse>> Remove(std::string path, bool recursive) {
    return Remove(std::move(path), recursive, std::nullopt);
  }
  asio::awaitable<Result<DeleteResponse>> Remove(std::string path) {
    return Remove(std::move(path), false, std::nullopt);
  }
  // POST /v1/fs/edit (docs/PROTOCOL.md, "Edit"): exact and line-range
  // edits applied together by one atomic replace, or none (edit_mismatch
  // names the edit, the count found and its lines). Never retried.
  asio::awaitable<Result<EditResponse>> Edit(EditRequest request);
  asio::awaitable<Result<std::string>> Realpath(std::string path);
  // GET /v1/fs/search: the lines matching `pattern` below `path` (or in the
  // file `path`), then the summary naming the bound that cut it, if any.
  // Retried until the stream starts; a stream that ends without its
  // summary is an error (protocol_error or transport_error).
  asio::awaitable<Result<SearchResult>> Search(std::string path, std::string pattern,
                                               SearchOptions options);
  asio::awaitable<Result<SearchResult>> Search(std::string path, std::string pattern) {
    return Search(std::move(path), std::move(pattern), SearchOptions{});
  }
  // GET /v1/fs/glob: entries below `path` matching `pattern`, sorted.
  asio::awaitable<Result<GlobResponse>> Glob(std::string path, std::string pattern,
                                             WalkQuery query);
  asio::awaitable<Result<GlobResponse>> Glob(std::string path, std::string pattern) {
    return Glob(std::move(path), std::move(pattern), WalkQuery{});
  }

  // Uploads the contents of local directory `local` into guest directory
  // `remote` (PUT /v1/fs/tar): modes, mtimes, symlinks as symlinks, hard
  // links, empty directories. Streams; memory stays flat for any tree.
  asio::awaitable<Result<TreeStats>> UploadDir(std::string local, std::string remote,
                                               TarCompression compression);
  asio::awaitable<Result<TreeStats>> UploadDir(std::string local, std::string remote) {
    return UploadDir(std::move(local), std::move(remote), TarCompression::kNone);
  }
  // Downloads guest directory `remote` into `local` (GET /v1/fs/tar), with
  // the daemon's own confinement rules: whatever the daemon sends, nothing
  // is written outside `local`, and a refused archive changes nothing.
  asio::awaitable<Result<TreeStats>> DownloadDir(std::string remote, std::string local,
                                                 TarCompression compression);
  asio::awaitable<Result<TreeStats>> DownloadDir(std::string remote, std::string local) {
    return DownloadDir(std::move(remote), std::move(local), TarCompression::kNone);
  }

  // --- Watch and tunnels (docs/CLIENT.md, "Watch" and "Tunnels") ---
  // GET /v1/fs/watch: delivers each change under `path` until on_event
  // returns false or the directory goes away; answers the number of events
  // delivered. A lost connection is re-established (bounded backoff) and
  // reported as an `overflow` event with reason "reconnected": changes in
  // between are unknown, so the caller rescans.
  asio::awaitable<Result<uint64_t>> Watch(std::string path, WatchOptions options,
                                          WatchCallbacks callbacks);
  // GET /v1/ports/{port}/connect: a raw byte tunnel to 127.0.0.1:port in
  // the guest. A closed port is port_unreachable (502).
  asio::awaitable<Result<std::unique_ptr<Tunnel>>> OpenTunnel(uint16_t port);
  // GET /v1/ports: the TCP ports listening in the guest.
  asio::awaitable<Result<std::vector<GuestPort>>> ListPorts();
  // GET /v1/ports?wait_for=PORT: true once the port listens in the guest,
  // false when `timeout` (absent: no limit) passed first.
  asio::awaitable<Result<bool>> WaitForPort(uint16_t port,
                                            std::optional<std::chrono::milliseconds> timeout);
  asio::awaitable<Result<bool>> WaitForPort(uint16_t port) {
    return WaitForPort(port, std::nullopt);
  }
  // GET /v1/fs/stat?until=exists|gone: true once `path` exists (or with
  // `gone`, no longer does), false when `timeout` passed first. Confined
  // like every fs call.
  asio::awaitable<Result<bool>> WaitForPath(std::string path, bool gone,
                                            std::optional<std::chrono::milliseconds> timeout);
  asio::awaitable<Result<bool>> WaitForPath(std::string path, bool gone) {
    return WaitForPath(std::move(path), gone, std::nullopt);
  }

  template <typename Token>
  auto AsyncHealth(Token&& token) {
    return detail::Launch(executor_, Health(), std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncMetrics(Token&& token) {
    return detail::Launch(executor_, Metrics(), std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncBootstrap(BootstrapRequest request, Token&& token) {
    return detail::Launch(executor_, Bootstrap(std::move(request)), std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncReset(ResetRequest request, Token&& token) {
    return detail::Launch(executor_, Reset(std::move(request)), std::forward<Token>(token));
  }

  template <typename Token>
  auto AsyncStartExec(std::string id, ExecStartRequest request, Token&& token) {
    return detail::Launch(executor_, StartExec(std::move(id), std::move(request)),
                          std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncPollExec(std::string id, PollOptions options, Token&& token) {
    return detail::Launch(executor_, PollExec(std::move(id), options), std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncStartExecAndWait(std::string id, ExecStartRequest request, PollOptions options,
                             Token&& token) {
    return detail::Launch(executor_, StartExecAndWait(std::move(id), std::move(request), options),
                          std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncWaitExec(std::string id, std::chrono::milliseconds timeout, Token&& token) {
    return detail::Launch(executor_, WaitExec(std::move(id), timeout), std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncWaitForOutput(std::string id, std::string pattern, WaitForOutputOptions options,
                          Token&& token) {
    return detail::Launch(executor_, WaitForOutput(std::move(id), std::move(pattern), options),
                          std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncWaitForPort(uint16_t port, std::optional<std::chrono::milliseconds> timeout,
                        Token&& token) {
    return detail::Launch(executor_, WaitForPort(port, timeout), std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncWaitForPath(std::string path, bool gone,
                        std::optional<std::chrono::milliseconds> timeout, Token&& token) {
    return detail::Launch(executor_, WaitForPath(std::move(path), gone, timeout),
                          std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncKillExec(std::string id, KillRequest request, Token&& token) {
    return detail::Launch(executor_, KillExec(std::move(id), std::move(request)),
                          std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncAckExec(std::string id, Token&& token) {
    return detail::Launch(executor_, AckExec(std::move(id)), std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncExecEgress(std::string id, Token&& token) {
    return detail::Launch(executor_, ExecEgress(std::move(id)), std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncListExecs(Token&& token) {
    return detail::Launch(executor_, ListExecs(), std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncWriteStdin(std::string id, uint64_t offset, std::string bytes, bool eof,
                       Token&& token) {
    return detail::Launch(executor_, WriteStdin(std::move(id), offset, std::move(bytes), eof),
                          std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncStream(std::string id, StreamCursors cursors, StreamCallbacks callbacks,
                   Token&& token) {
    return detail::Launch(executor_, Stream(std::move(id), cursors, std::move(callbacks)),
                          std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncRunCode(RunRequest request, Token&& token) {
    return detail::Launch(executor_, RunCode(std::move(request)), std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncResizeExec(std::string id, int rows, int cols, Token&& token) {
    return detail::Launch(executor_, ResizeExec(std::move(id), rows, cols),
                          std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncWatch(std::string path, WatchOptions options, WatchCallbacks callbacks, Token&& token) {
    return detail::Launch(executor_, Watch(std::move(path), options, std::move(callbacks)),
                          std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncListPorts(Token&& token) {
    return detail::Launch(executor_, ListPorts(), std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncOpenTunnel(uint16_t port, Token&& token) {
    return detail::Launch(executor_, OpenTunnel(port), std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncReadOutput(std::string id, std::string stream, uint64_t start, Token&& token) {
    return detail::Launch(executor_, ReadOutput(std::move(id), std::move(stream), start),
                          std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncRun(ExecStartRequest request, RunOptions options, Token&& token) {
    return detail::Launch(executor_, Run(std::move(request), std::move(options)),
                          std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncReadFile(std::string path, ReadOptions options, Token&& token) {
    return detail::Launch(executor_, ReadFile(std::move(path), options),
                          std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncWriteFile(std::string path, std::string contents, WriteOptions options, Token&& token) {
    return detail::Launch(executor_, WriteFile(std::move(path), std::move(contents), options),
                          std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncStat(std::string path, bool follow, Token&& token) {
    return detail::Launch(executor_, Stat(std::move(path), follow), std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncListDir(std::string path, Token&& token) {
    return detail::Launch(executor_, ListDir(std::move(path)), std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncMakeDir(MkdirRequest request, Token&& token) {
    return detail::Launch(executor_, MakeDir(std::move(request)), std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncEdit(EditRequest request, Token&& token) {
    return detail::Launch(executor_, Edit(std::move(request)), std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncRename(RenameRequest request, Token&& token) {
    return detail::Launch(executor_, Rename(std::move(request)), std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncRemove(std::string path, bool recursive, Token&& token) {
    return detail::Launch(executor_, Remove(std::move(path), recursive),
                          std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncRealpath(std::string path, Token&& token) {
    return detail::Launch(executor_, Realpath(std::move(path)), std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncSearch(std::string path, std::string pattern, SearchOptions options, Token&& token) {
    return detail::Launch(executor_,
                          Search(std::move(path), std::move(pattern), std::move(options)),
                          std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncGlob(std::string path, std::string pattern, WalkQuery query, Token&& token) {
    return detail::Launch(executor_, Glob(std::move(path), std::move(pattern), std::move(query)),
                          std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncUploadDir(std::string local, std::string remote, TarCompression compression,
                      Token&& token) {
    return detail::Launch(executor_, UploadDir(std::move(local), std::move(remote), compression),
                          std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncDownloadDir(std::string remote, std::string local, TarCompression compression,
                        Token&& token) {
    return detail::Launch(executor_, DownloadDir(std::move(remote), std::move(local), compression),
                          std::forward<Token>(token));
  }

  // The transport, for the library's own extensions (exec, files, trees).
  Transport& transport() { return *transport_; }

 private:
  asio::any_io_executor executor_;
  std::unique_ptr<Transport> transport_;
};

}  // namespace agentd::client
