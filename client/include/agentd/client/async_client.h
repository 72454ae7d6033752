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
// Thread-safety: an AsyncClient is used from its executor only (one strand);
// calls may overlap (each takes its own pooled connection). It must outlive
// the calls it started. Callbacks run on the executor.
#pragma once

#include <asio.hpp>
#include <exception>
#include <memory>
#include <string>

#include "agentd/client/options.h"
#include "agentd/client/trees.h"
#include "agentd/protocol/bootstrap.h"
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
  // POST /v1/bootstrap. Retried safely: a replay with the same token is
  // answered "replayed". On success the client uses the token from then on.
  asio::awaitable<Result<BootstrapResponse>> Bootstrap(BootstrapRequest request);

  // Uploads the contents of local directory `local` into guest directory
  // `remote` (PUT /v1/fs/tar): modes, mtimes, symlinks as symlinks, hard
  // links, empty directories. Streams; memory stays flat for any tree.
  asio::awaitable<Result<TreeStats>> UploadDir(std::string local, std::string remote,
                                               TarCompression compression = TarCompression::kNone);
  // Downloads guest directory `remote` into `local` (GET /v1/fs/tar), with
  // the daemon's own confinement rules: whatever the daemon sends, nothing
  // is written outside `local`, and a refused archive changes nothing.
  asio::awaitable<Result<TreeStats>> DownloadDir(
      std::string remote, std::string local, TarCompression compression = TarCompression::kNone);

  template <typename Token>
  auto AsyncHealth(Token&& token) {
    return detail::Launch(executor_, Health(), std::forward<Token>(token));
  }
  template <typename Token>
  auto AsyncBootstrap(BootstrapRequest request, Token&& token) {
    return detail::Launch(executor_, Bootstrap(std::move(request)), std::forward<Token>(token));
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
