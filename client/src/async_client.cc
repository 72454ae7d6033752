#include "agentd/client/async_client.h"

#include "exec_calls.h"
#include "transport.h"
#include "tree_transfer.h"

namespace agentd::client {
namespace {

template <typename T>
Result<T> DecodeJson(const Result<HttpResponse>& response,
                     Result<T> (*decode)(const json::Value&)) {
  if (!response.ok()) return response.status();
  Result<json::Value> doc = json::Parse(response->body);
  if (!doc.ok()) {
    return Status::Error(ErrorCode::kProtocolError,
                         "the daemon's answer is not JSON: " + doc.status().message());
  }
  return decode(*doc);
}

}  // namespace

AsyncClient::AsyncClient(asio::any_io_executor executor, ClientOptions options)
    : executor_(executor), transport_(std::make_unique<Transport>(executor, std::move(options))) {}

AsyncClient::~AsyncClient() = default;

const ClientOptions& AsyncClient::options() const { return transport_->options(); }

void AsyncClient::SetToken(std::string token) { transport_->set_token(std::move(token)); }

asio::awaitable<Result<HealthResponse>> AsyncClient::Health() {
  HttpRequest req;
  req.target = "/v1/health";
  req.idempotent = true;
  co_return DecodeJson<HealthResponse>(co_await transport_->Call(req), &DecodeHealthResponse);
}

asio::awaitable<Result<BootstrapResponse>> AsyncClient::Bootstrap(BootstrapRequest request) {
  HttpRequest req;
  req.method = "POST";
  req.target = "/v1/bootstrap";
  req.content_type = "application/json";
  req.body = json::Serialize(EncodeBootstrapRequest(request));
  // Safe to retry: the same token replays, and a replay changes nothing.
  req.idempotent = true;
  Result<BootstrapResponse> r =
      DecodeJson<BootstrapResponse>(co_await transport_->Call(req), &DecodeBootstrapResponse);
  if (r.ok()) transport_->set_token(request.token);
  co_return r;
}

asio::awaitable<Result<ExecInfo>> AsyncClient::StartExec(std::string id, ExecStartRequest request) {
  co_return co_await StartExecCall(*transport_, std::move(id), std::move(request));
}

asio::awaitable<Result<ExecPollResponse>> AsyncClient::PollExec(std::string id,
                                                                PollOptions options) {
  co_return co_await PollExecCall(*transport_, std::move(id), options);
}

asio::awaitable<Result<ExecInfo>> AsyncClient::WaitExec(std::string id,
                                                        std::chrono::milliseconds timeout) {
  co_return co_await WaitExecCall(*transport_, std::move(id), timeout);
}

asio::awaitable<Result<ExecInfo>> AsyncClient::KillExec(std::string id, KillRequest request) {
  co_return co_await KillExecCall(*transport_, std::move(id), std::move(request));
}

asio::awaitable<Result<ExecInfo>> AsyncClient::AckExec(std::string id) {
  co_return co_await AckExecCall(*transport_, std::move(id));
}

asio::awaitable<Result<std::vector<ExecInfo>>> AsyncClient::ListExecs() {
  co_return co_await ListExecsCall(*transport_);
}

asio::awaitable<Result<uint64_t>> AsyncClient::WriteStdin(std::string id, uint64_t offset,
                                                          std::string bytes, bool eof) {
  co_return co_await WriteStdinCall(*transport_, std::move(id), offset, std::move(bytes), eof);
}

asio::awaitable<Result<ExecInfo>> AsyncClient::Stream(std::string id, StreamCursors cursors,
                                                      StreamCallbacks callbacks) {
  co_return co_await StreamExecCall(*transport_, std::move(id), cursors, std::move(callbacks));
}

asio::awaitable<Result<RunResult>> AsyncClient::Run(ExecStartRequest request, RunOptions options) {
  co_return co_await RunCall(*transport_, std::move(request), std::move(options));
}

asio::awaitable<Result<TreeStats>> AsyncClient::UploadDir(std::string local, std::string remote,
                                                          TarCompression compression) {
  co_return co_await UploadTree(*transport_, std::move(local), std::move(remote), compression);
}

asio::awaitable<Result<TreeStats>> AsyncClient::DownloadDir(std::string remote, std::string local,
                                                            TarCompression compression) {
  co_return co_await DownloadTree(*transport_, std::move(remote), std::move(local), compression);
}

}  // namespace agentd::client
