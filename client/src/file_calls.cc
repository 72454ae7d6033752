#include "file_calls.h"

#include "agentd/protocol/percent.h"

namespace agentd::client {
namespace {

std::string PathQuery(std::string_view route, const std::string& path) {
  return std::string(route) + "?path=" + PercentEncode(path, /*keep_slash=*/true);
}

std::string WriteTarget(const std::string& path, const WriteOptions& o) {
  std::string target = PathQuery("/v1/fs/file", path);
  if (o.mode) target += "&mode=" + FormatMode(*o.mode);
  if (o.parents) target += "&parents=1";
  if (o.user) target += "&user=" + PercentEncode(*o.user, /*keep_slash=*/true);
  if (o.group) target += "&group=" + PercentEncode(*o.group, /*keep_slash=*/true);
  if (!o.etag) target += "&etag=0";
  return target;
}

void AddPreconditions(HttpRequest& req, const Preconditions& guard) {
  if (guard.if_match) req.headers.emplace_back("If-Match", *guard.if_match);
  if (guard.if_none_match) req.headers.emplace_back("If-None-Match", "*");
}

bool Guarded(const Preconditions& guard) { return guard.if_match || guard.if_none_match; }

// PUT /v1/fs/file without its body. A body that can be sent again whole
// (bytes, or a file from its start) leaves the same file each time: safe to
// retry, unless guarded (the first attempt changed what the guard checks).
HttpRequest WriteRequest(const std::string& path, const WriteOptions& options, bool resendable) {
  HttpRequest req;
  req.method = "PUT";
  req.target = WriteTarget(path, options);
  req.content_type = "application/octet-stream";
  AddPreconditions(req, options.guard);
  req.idempotent = resendable && !Guarded(options.guard);
  return req;
}

// GET /v1/fs/file: whole, lines, or a byte range.
HttpRequest ReadRequest(const std::string& path, const ReadOptions& o) {
  HttpRequest req;
  req.target = PathQuery("/v1/fs/file", path);
  if (o.start_line) req.target += "&start_line=" + std::to_string(*o.start_line);
  if (o.end_line) req.target += "&end_line=" + std::to_string(*o.end_line);
  if (o.first_byte) {
    req.headers.emplace_back("Range", "bytes=" + std::to_string(*o.first_byte) + "-" +
                                          (o.last_byte ? std::to_string(*o.last_byte) : ""));
  }
  req.idempotent = true;
  return req;
}

}  // namespace

asio::awaitable<Result<uint64_t>> ReadFileCall(Transport& t, std::string path, ReadOptions o,
                                               ByteSink sink, std::optional<std::string>* etag) {
  // Reads are retried until the body starts; a body cut short is an error
  // the caller sees (its sink already received part of the file).
  Result<std::unique_ptr<ResponseStream>> stream = co_await t.Open(ReadRequest(path, o));
  if (!stream.ok()) co_return stream.status();
  if (etag != nullptr) {
    const std::string* tag = (*stream)->head().Header("etag");
    *etag = tag != nullptr ? std::optional<std::string>(*tag) : std::nullopt;
  }
  uint64_t total = 0;
  for (;;) {
    Result<std::string_view> chunk =
        co_await (*stream)->Read(Clock::now() + t.options().request_timeout);
    if (!chunk.ok()) co_return chunk.status();
    if (chunk->empty()) break;
    total += chunk->size();
    Status s = sink(*chunk);
    if (!s.ok()) {
      (*stream)->connection().Close();
      co_return s;
    }
  }
  co_return total;
}

asio::awaitable<Result<uint64_t>> ReadFileToFdCall(Transport& t, std::string path, ReadOptions o,
                                                   int fd, ByteCounter progress) {
  // Retried like ReadFileCall until the body starts.
  Result<std::unique_ptr<ResponseStream>> stream = co_await t.Open(ReadRequest(path, o));
  if (!stream.ok()) co_return stream.status();
  co_return co_await (*stream)->ReadToFd(fd, t.options().request_timeout, progress);
}

asio::awaitable<Result<FileStat>> WriteFileCall(Transport& t, std::string path,
                                                std::string contents, WriteOptions options) {
  HttpRequest req = WriteRequest(path, options, /*resendable=*/true);
  req.body = std::move(contents);
  co_return DecodeAnswer<FileStat>(co_await t.Call(req), &DecodeFileStat);
}

asio::awaitable<Result<FileStat>> WriteFileFromCall(Transport& t, std::string path,
                                                    ByteSource source, WriteOptions options) {
  HttpRequest req = WriteRequest(path, options, /*resendable=*/false);
  req.source = [&source]() -> asio::awaitable<Result<std::string_view>> { co_return source(); };
  co_return DecodeAnswer<FileStat>(co_await t.Call(req), &DecodeFileStat);
}

asio::awaitable<Result<FileStat>> WriteFileFromFdCall(Transport& t, std::string path, int fd,
                                                      uint64_t size, WriteOptions options) {
  // Each attempt sends the file from its start.
  HttpRequest req = WriteRequest(path, options, /*resendable=*/true);
  req.file = FileBody{fd, size};
  co_return DecodeAnswer<FileStat>(co_await t.Call(req), &DecodeFileStat);
}

asio::awaitable<Result<FileStat>> StatCall(Transport& t, std::string path, bool follow) {
  HttpRequest req;
  req.target = PathQuery("/v1/fs/stat", path) + (follow ? "&follow=1" : "");
  req.idempotent = true;
  co_return DecodeAnswer<FileStat>(co_await t.Call(req), &DecodeFileStat);
}

asio::awaitable<Result<ListResponse>> ListCall(Transport& t, std::string path) {
  HttpRequest req;
  req.target = PathQuery("/v1/fs/list", path);
  req.idempotent = true;
  co_return DecodeAnswer<ListResponse>(co_await t.Call(req), &DecodeListResponse);
}

asio::awaitable<Result<FileStat>> MakeDirCall(Transport& t, MkdirRequest request) {
  HttpRequest req;
  req.method = "POST";
  req.target = "/v1/fs/mkdir";
  req.body = json::Serialize(EncodeMkdirRequest(request));
  req.content_type = "application/json";
  // With parents an existing directory is a success, so a retry is safe;
  // without, a retry could see its own first attempt as already_exists.
  req.idempotent = request.parents;
  co_return DecodeAnswer<FileStat>(co_await t.Call(req), &DecodeFileStat);
}

asio::awaitable<Result<FileStat>> RenameCall(Transport& t, RenameRequest request,
                                             Preconditions guard) {
  HttpRequest req;
  AddPreconditions(req, guard);
  req.method = "POST";
  req.target = "/v1/fs/rename";
  req.body = json::Serialize(EncodeRenameRequest(request));
  req.content_type = "application/json";
  co_return DecodeAnswer<FileStat>(co_await t.Call(req), &DecodeFileStat);  // never retried blindly
}

asio::awaitable<Result<DeleteResponse>> RemoveCall(Transport& t, std::string path, bool recursive,
                                                   std::optional<std::string> if_match) {
  HttpRequest req;
  AddPreconditions(req, Preconditions{std::move(if_match), false});
  req.method = "DELETE";
  req.target = PathQuery("/v1/fs", path) + (recursive ? "&recursive=1" : "");
  co_return DecodeAnswer<DeleteResponse>(co_await t.Call(req), &DecodeDeleteResponse);
}

asio::awaitable<Result<EditResponse>> EditCall(Transport& t, EditRequest request) {
  HttpRequest req;
  req.method = "POST";
  req.target = "/v1/fs/edit";
  req.body = json::Serialize(EncodeEditRequest(request));
  req.content_type = "application/json";
  // Never retried blindly: a retry of an applied edit would find its `old`
  // text gone (edit_mismatch) or the tag changed (precondition_failed).
  co_return DecodeAnswer<EditResponse>(co_await t.Call(req), &DecodeEditResponse);
}

asio::awaitable<Result<std::string>> RealpathCall(Transport& t, std::string path) {
  HttpRequest req;
  req.target = PathQuery("/v1/fs/realpath", path);
  req.idempotent = true;
  Result<RealpathResponse> r =
      DecodeAnswer<RealpathResponse>(co_await t.Call(req), &DecodeRealpathResponse);
  if (!r.ok()) co_return r.status();
  co_return std::move(r->path);
}

}  // namespace agentd::client
