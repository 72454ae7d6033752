#include "agentd/client/async_client.h"

#include <algorithm>

#include "context_calls.h"
#include "exec_calls.h"
#include "file_calls.h"
#include "reactive_calls.h"
#include "search_calls.h"
#include "transport.h"
#include "tree_transfer.h"

namespace agentd::client {

AsyncClient::AsyncClient(asio::any_io_executor executor, ClientOptions options)
    : executor_(executor), transport_(std::make_unique<Transport>(executor, std::move(options))) {}

AsyncClient::~AsyncClient() = default;

const ClientOptions& AsyncClient::options() const { return transport_->options(); }

void AsyncClient::SetToken(std::string token) { transport_->set_token(std::move(token)); }

namespace {

// A 503 that carries the daemon's health document (docs/CLIENT.md,
// "Health"): a JSON object naming its protocol, a `status` other than "ok"
// and a `reason`. Anything else (a proxy's 503, garbage) stays an error.
bool IsUnreadyHealth(int status, std::string_view body) {
  if (status != 503) return false;
  Result<json::Value> doc = json::Parse(body);
  if (!doc.ok() || !doc->is_object()) return false;
  const json::Value* s = doc->Find("status");
  const json::Value* reason = doc->Find("reason");
  const json::Value* protocol = doc->Find("protocol");
  return s && s->is_string() && s->as_string() != "ok" && reason && reason->is_string() &&
         !reason->as_string().empty() && protocol && (protocol->is_int() || protocol->is_string());
}

}  // namespace

asio::awaitable<Result<HealthResponse>> AsyncClient::Health() {
  HttpRequest req;
  req.target = "/v1/health";
  req.idempotent = true;
  // A daemon that cannot take work answers 503 with its health: that is the
  // answer (status and reason), at once, not an error to retry.
  req.answer_if = &IsUnreadyHealth;
  Result<HttpResponse> r = co_await transport_->Call(req);
  // Health answers whatever protocol the daemon speaks; the other calls
  // learn from it (docs/CLIENT.md, "Version negotiation").
  if (r.ok()) {
    Result<json::Value> doc = json::Parse(r->body);
    if (doc.ok() && doc->is_object()) transport_->NoteHealth(*doc);
  }
  co_return DecodeAnswer<HealthResponse>(r, &DecodeHealthResponse);
}

asio::awaitable<Result<std::string>> AsyncClient::Metrics(size_t max_bytes) {
  HttpRequest req;
  req.target = "/v1/metrics";
  req.idempotent = true;
  Result<HttpResponse> r = co_await transport_->Call(req, max_bytes);
  if (!r.ok()) co_return r.status();
  co_return std::move(r->body);
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
      DecodeAnswer<BootstrapResponse>(co_await transport_->Call(req), &DecodeBootstrapResponse);
  if (r.ok()) transport_->set_token(request.token);
  co_return r;
}

asio::awaitable<Result<ResetReport>> AsyncClient::Reset(ResetRequest request) {
  HttpRequest req;
  req.method = "POST";
  req.target = "/v1/reset";
  req.content_type = "application/json";
  req.body = json::Serialize(EncodeResetRequest(request));
  // Safe to retry: the same reset_id answers the recorded report.
  req.idempotent = true;
  Result<ResetReport> r =
      DecodeAnswer<ResetReport>(co_await transport_->Call(req), &DecodeResetReport);
  if (r.ok() && r->clean && request.next) transport_->set_token(request.next->token);
  co_return r;
}

asio::awaitable<Result<OutputChunk>> AsyncClient::ReadOutput(std::string id, std::string stream,
                                                             uint64_t start, size_t max_bytes) {
  co_return co_await ReadOutputCall(*transport_, std::move(id), std::move(stream), start,
                                    max_bytes);
}

asio::awaitable<Result<ExecInfo>> AsyncClient::StartExec(std::string id, ExecStartRequest request) {
  co_return co_await StartExecCall(*transport_, std::move(id), std::move(request));
}

asio::awaitable<Result<ExecPollResponse>> AsyncClient::PollExec(std::string id,
                                                                PollOptions options) {
  co_return co_await PollExecCall(*transport_, std::move(id), options);
}

asio::awaitable<Result<ExecPollResponse>> AsyncClient::StartExecAndWait(std::string id,
                                                                        ExecStartRequest request,
                                                                        PollOptions options) {
  co_return co_await StartAndPollCall(*transport_, std::move(id), std::move(request), options);
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

asio::awaitable<Result<EgressReport>> AsyncClient::ExecEgress(std::string id) {
  co_return co_await ExecEgressCall(*transport_, std::move(id));
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

asio::awaitable<Result<RunResponse>> AsyncClient::RunCode(RunRequest request) {
  HttpRequest req;
  req.method = "POST";
  req.target = "/v1/run";
  req.content_type = "application/json";
  req.body = json::Serialize(EncodeRunRequest(request));
  req.idempotent = false;  // it runs code: never sent twice
  int64_t timeout =
      std::min<int64_t>(request.timeout_sec.value_or(kMaxRunTimeoutSec), kMaxRunTimeoutSec);
  req.extra_wait = std::chrono::seconds(timeout + 30);
  co_return DecodeAnswer<RunResponse>(co_await transport_->Call(req), &DecodeRunResponse);
}

asio::awaitable<Result<ContextInfo>> AsyncClient::CreateContext(ContextCreateRequest request) {
  co_return co_await CreateContextCall(*transport_, std::move(request));
}

asio::awaitable<Result<RunResponse>> AsyncClient::RunInContext(std::string id,
                                                               ContextRunRequest request) {
  co_return co_await RunInContextCall(*transport_, std::move(id), std::move(request));
}

asio::awaitable<Result<ContextInfo>> AsyncClient::GetContext(std::string id) {
  co_return co_await ContextCall(*transport_, "GET", std::move(id), "");
}

asio::awaitable<Result<std::vector<ContextInfo>>> AsyncClient::ListContexts() {
  co_return co_await ListContextsCall(*transport_);
}

asio::awaitable<Result<ContextInfo>> AsyncClient::ResetContext(std::string id) {
  co_return co_await ContextCall(*transport_, "POST", std::move(id), "/reset");
}

asio::awaitable<Result<ContextInfo>> AsyncClient::DeleteContext(std::string id) {
  co_return co_await ContextCall(*transport_, "DELETE", std::move(id), "");
}

asio::awaitable<Result<uint64_t>> AsyncClient::ReadFileTo(std::string path, ReadOptions options,
                                                          ByteSink sink) {
  co_return co_await ReadFileCall(*transport_, std::move(path), options, std::move(sink));
}

asio::awaitable<Result<uint64_t>> AsyncClient::ReadFileToFd(std::string path, ReadOptions options,
                                                            int fd, ByteCounter progress) {
  co_return co_await ReadFileToFdCall(*transport_, std::move(path), options, fd,
                                      std::move(progress));
}

asio::awaitable<Result<std::string>> AsyncClient::ReadFile(std::string path, ReadOptions options) {
  Result<TaggedContent> r = co_await ReadFileWithEtag(std::move(path), options);
  if (!r.ok()) co_return r.status();
  co_return std::move(r->data);
}

asio::awaitable<Result<TaggedContent>> AsyncClient::ReadFileWithEtag(std::string path,
                                                                     ReadOptions options) {
  TaggedContent content;
  std::string& out = content.data;
  size_t limit = options.max_bytes;
  ByteSink sink = [&out, limit](std::string_view bytes) {
    if (out.size() + bytes.size() > limit) {
      return Status::Error(ErrorCode::kPayloadTooLarge,
                           "file is larger than ReadOptions::max_bytes (" + std::to_string(limit) +
                               "); use ReadFileTo to stream it")
          .With("limit", limit);
    }
    out.append(bytes);
    return Status::Ok();
  };
  Result<uint64_t> n =
      co_await ReadFileCall(*transport_, std::move(path), options, std::move(sink), &content.etag);
  if (!n.ok()) co_return n.status();
  co_return content;
}

asio::awaitable<Result<FileStat>> AsyncClient::WriteFile(std::string path, std::string contents,
                                                         WriteOptions options) {
  co_return co_await WriteFileCall(*transport_, std::move(path), std::move(contents),
                                   std::move(options));
}

asio::awaitable<Result<FileStat>> AsyncClient::WriteFileFromFd(std::string path, int fd,
                                                               uint64_t size,
                                                               WriteOptions options) {
  co_return co_await WriteFileFromFdCall(*transport_, std::move(path), fd, size,
                                         std::move(options));
}

asio::awaitable<Result<FileStat>> AsyncClient::WriteFileFrom(std::string path, ByteSource source,
                                                             WriteOptions options) {
  co_return co_await WriteFileFromCall(*transport_, std::move(path), std::move(source),
                                       std::move(options));
}

asio::awaitable<Result<FileStat>> AsyncClient::Stat(std::string path, bool follow) {
  co_return co_await StatCall(*transport_, std::move(path), follow);
}

asio::awaitable<Result<SearchResult>> AsyncClient::Search(std::string path, std::string pattern,
                                                          SearchOptions options) {
  co_return co_await SearchCall(*transport_, std::move(path), std::move(pattern),
                                std::move(options));
}

asio::awaitable<Result<GlobResponse>> AsyncClient::Glob(std::string path, std::string pattern,
                                                        WalkQuery query) {
  co_return co_await GlobCall(*transport_, std::move(path), std::move(pattern), std::move(query));
}

asio::awaitable<Result<ListResponse>> AsyncClient::ListDir(std::string path) {
  co_return co_await ListCall(*transport_, std::move(path));
}

asio::awaitable<Result<FileStat>> AsyncClient::MakeDir(MkdirRequest request) {
  co_return co_await MakeDirCall(*transport_, std::move(request));
}

asio::awaitable<Result<FileStat>> AsyncClient::Rename(RenameRequest request, Preconditions guard) {
  co_return co_await RenameCall(*transport_, std::move(request), std::move(guard));
}

asio::awaitable<Result<DeleteResponse>> AsyncClient::Remove(std::string path, bool recursive,
                                                            std::optional<std::string> if_match) {
  co_return co_await RemoveCall(*transport_, std::move(path), recursive, std::move(if_match));
}

asio::awaitable<Result<EditResponse>> AsyncClient::Edit(EditRequest request) {
  co_return co_await EditCall(*transport_, std::move(request));
}

asio::awaitable<Result<std::string>> AsyncClient::Realpath(std::string path) {
  co_return co_await RealpathCall(*transport_, std::move(path));
}

asio::awaitable<Result<TreeStats>> AsyncClient::UploadDir(std::string local, std::string remote,
                                                          TarCompression compression) {
  co_return co_await UploadTree(*transport_, std::move(local), std::move(remote), compression);
}

asio::awaitable<Result<TreeStats>> AsyncClient::DownloadDir(std::string remote, std::string local,
                                                            TarCompression compression) {
  co_return co_await DownloadTree(*transport_, std::move(remote), std::move(local), compression);
}

asio::awaitable<Result<ExecInfo>> AsyncClient::ResizeExec(std::string id, int rows, int cols) {
  co_return co_await ResizeExecCall(*transport_, std::move(id), rows, cols);
}

asio::awaitable<Result<uint64_t>> AsyncClient::Watch(std::string path, WatchOptions options,
                                                     WatchCallbacks callbacks) {
  co_return co_await WatchCall(*transport_, std::move(path), options, std::move(callbacks));
}

asio::awaitable<Result<std::vector<GuestPort>>> AsyncClient::ListPorts() {
  co_return co_await ListPortsCall(*transport_);
}

asio::awaitable<Result<ExecPollResponse>> AsyncClient::WaitForOutput(std::string id,
                                                                     std::string pattern,
                                                                     WaitForOutputOptions options) {
  co_return co_await WaitForOutputCall(*transport_, std::move(id), std::move(pattern), options);
}

asio::awaitable<Result<bool>> AsyncClient::WaitForPort(
    uint16_t port, std::optional<std::chrono::milliseconds> timeout) {
  co_return co_await WaitForPortCall(*transport_, port, timeout);
}

asio::awaitable<Result<bool>> AsyncClient::WaitForPath(
    std::string path, bool gone, std::optional<std::chrono::milliseconds> timeout) {
  co_return co_await WaitForPathCall(*transport_, std::move(path), gone, timeout);
}

asio::awaitable<Result<std::unique_ptr<Tunnel>>> AsyncClient::OpenTunnel(uint16_t port) {
  co_return co_await OpenTunnelCall(*transport_, port);
}

}  // namespace agentd::client
