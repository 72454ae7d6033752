// GET and PUT /v1/fs/file (docs/PROTOCOL.md, "Files"): streamed reads
// (sendfile; line ranges located by a bounded scan; HTTP byte ranges) and
// atomic streamed writes.
// GCC 12 false positive: when it inlines Asio's recycling frame allocator
// (aligned_alloc) into a large coroutine it reports the matching operator
// delete as mismatched.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#include <unistd.h>

#include <cerrno>

#include "agentd/protocol/fs.h"
#include "agentd/trees/posix_error.h"
#include "api/fs_route_util.h"
#include "api/pool_job.h"
#include "api/query_reader.h"
#include "api/request_ownership.h"
#include "api/routes.h"
#include "fs/atomic_file.h"
#include "fs/background_hasher.h"
#include "fs/file_read.h"
#include "fs/line_scanner.h"
#include "metrics/daemon_metrics.h"

namespace agentd {
namespace {

constexpr std::string_view kOctetStream = "application/octet-stream";
// Reads of files whose size is unknown (procfs, sysfs) go in blocks of this.
constexpr size_t kStreamBlockBytes = 64 * 1024;

// A file whose size the kernel does not know (procfs and the like) is read
// to its end in blocks and sent chunked, through the line filter if any.
asio::awaitable<void> StreamToEnd(FsRoute r, std::shared_ptr<ReadableFile> file,
                                  std::optional<LineRange> lines, Response& res,
                                  const Headers& headers) {
  std::optional<LineRangeScanner> scanner;
  if (lines) scanner.emplace(*lines);
  std::optional<uint64_t> unknown_length;
  AGENTD_CO_RETURN_IF_ERROR_VOID(co_await res.Begin(200, kOctetStream, unknown_length, headers));
  auto buf = std::make_shared<std::string>(kStreamBlockBytes, '\0');
  for (;;) {
    auto read_block = [file, buf]() -> Result<size_t> {
      for (;;) {
        ssize_t got = ::read(file->fd.get(), buf->data(), buf->size());
        if (got >= 0) return static_cast<size_t>(got);
        if (errno != EINTR) return PosixError(errno, "cannot read");
      }
    };
    Result<size_t> n = co_await RunBlocking(r.ctx.blocking, read_block);
    if (!n.ok() || *n == 0) break;  // a read error cuts the stream short
    std::string_view block(buf->data(), *n);
    if (scanner) block = scanner->Feed(block);
    uint64_t was = res.body_bytes();  // HEAD sends none
    AGENTD_CO_RETURN_IF_ERROR_VOID(co_await res.Write(block));
    metrics::Daemon().file_bytes_out.Inc(res.body_bytes() - was);
    if (scanner && scanner->done()) break;
  }
  co_await res.End();
}

asio::awaitable<void> SendSpan(Response& res, int status, int fd, uint64_t begin, uint64_t end,
                               const Headers& headers) {
  std::optional<uint64_t> length = end - begin;
  AGENTD_CO_RETURN_IF_ERROR_VOID(co_await res.Begin(status, kOctetStream, length, headers));
  uint64_t was = res.body_bytes();  // HEAD sends none
  AGENTD_CO_RETURN_IF_ERROR_VOID(co_await res.WriteFromFile(fd, begin, end - begin));
  metrics::Daemon().file_bytes_out.Inc(res.body_bytes() - was);
  co_await res.End();
}

asio::awaitable<void> ReadFile(FsRoute r, Request& req, Response& res) {
  QueryReader q(req.query());
  Result<RelPath> rel = CheckPath(r.fs, q.Required("path"));
  const std::string* start = q.String("start_line");
  const std::string* end = q.String("end_line");
  Status s = q.Finish();
  if (s.ok() && !rel.ok()) s = rel.status();
  std::optional<LineRange> lines;
  if (s.ok() && (start || end)) {
    Result<LineRange> parsed = ParseLineRange(start, end);
    if (parsed.ok()) lines = *parsed;
    s = parsed.status();
  }
  const std::string* range_header = req.Header("range");
  if (s.ok() && lines && range_header) {
    s = Status::InvalidRequest("a Range header cannot be combined with start_line or end_line")
            .With("field", "range");
  }
  if (!s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  auto open = [&]() -> Result<ReadableFile> { return OpenForRead(r.fs.root(), *rel); };
  Result<ReadableFile> opened = co_await RunBlocking(r.ctx.blocking, std::move(open));
  if (!opened.ok()) {
    co_await res.SendError(opened.status());
    co_return;
  }
  auto file = std::make_shared<ReadableFile>(std::move(*opened));
  // The whole file's ETag, hashed from this descriptor: the bytes sent
  // below come from the same open file (fs/file_tags.h says what a writer
  // in place can still do). One that kept changing is sent without a tag,
  // and so is a pseudo file's (procfs makes its content up on each read).
  std::string display = rel->display;
  Headers tag_header;
  if (!file->pseudo) {
    auto hash = [file, display, &tags = r.fs.tags()]() { return tags.Of(file->fd.get(), display); };
    Result<std::string> etag = co_await RunBlocking(r.fs.jobs(), std::move(hash));
    if (etag.ok()) tag_header.emplace_back("ETag", *etag);
  }
  if (file->size_unknown) {
    co_await StreamToEnd(r, file, lines, res, tag_header);
    co_return;
  }
  uint64_t size = static_cast<uint64_t>(file->st.st_size);
  if (lines) {
    LineRange range = *lines;
    auto locate = [file, size, range, display]() {
      return LocateLines(file->fd.get(), size, range, display);
    };
    auto span = co_await RunBlocking(r.fs.jobs(), std::move(locate));
    if (!span.ok()) {
      co_await res.SendError(span.status());
      co_return;
    }
    co_await SendSpan(res, 200, file->fd.get(), span->first, span->second, tag_header);
    co_return;
  }
  ByteRange range = range_header ? ParseByteRange(*range_header, size) : ByteRange{};
  if (range.kind == ByteRange::Kind::kUnsatisfiable) {
    Headers h{{"Content-Range", "bytes */" + std::to_string(size)}};
    co_await res.SendError(
        Status::Error(ErrorCode::kRangeNotSatisfiable,
                      "the range is outside the file of " + std::to_string(size) + " bytes")
            .With("path", rel->display)
            .With("size", size),
        h);
    co_return;
  }
  if (range.kind == ByteRange::Kind::kSatisfiable) {
    Headers h = tag_header;
    h.emplace_back("Content-Range", "bytes " + std::to_string(range.first) + "-" +
                                        std::to_string(range.last) + "/" + std::to_string(size));
    co_await SendSpan(res, 206, file->fd.get(), range.first, range.last + 1, h);
    co_return;
  }
  Headers h = tag_header;
  h.emplace_back("Accept-Ranges", "bytes");
  co_await SendSpan(res, 200, file->fd.get(), 0, size, h);
}

asio::awaitable<void> WriteFile(FsRoute r, Request& req, Response& res) {
  QueryReader q(req.query());
  Result<RelPath> rel = CheckPath(r.fs, q.Required("path"));
  const std::string* mode_text = q.String("mode");
  WriteOptions opts;
  opts.parents = q.Bool("parents", false);
  // etag=0: the answer carries no tag, and the upload hashes nothing (a
  // later stat or read hashes lazily, as for any other file).
  bool want_tag = q.Bool("etag", true);
  const std::string* user = q.String("user");
  const std::string* group = q.String("group");
  Status s = q.Finish();
  if (s.ok() && !rel.ok()) s = rel.status();
  if (s.ok()) {
    Result<Precondition> pre = PreconditionOf(req);
    if (pre.ok()) opts.precondition = std::move(*pre);
    s = pre.status();
  }
  opts.tags = &r.fs.tags();
  if (s.ok() && mode_text) {
    Result<uint32_t> mode = ParseMode(*mode_text, "mode");
    if (mode.ok()) opts.mode = *mode;
    s = mode.status();
  }
  if (s.ok()) {
    auto name = [](const std::string* p) {
      return p ? std::optional<std::string>(*p) : std::nullopt;
    };
    Result<Ownership> owner = ResolveOwnership(name(user), name(group));
    if (owner.ok()) opts.owner = *owner;
    s = owner.status();
  }
  if (!s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  opts.expected_size = req.content_length();
  // Checks and the temporary file come first: a refusal is answered
  // before the body is read (Expect: 100-continue is then never sent).
  auto create = [&]() { return AtomicFile::Create(r.fs.root(), *rel, opts); };
  Result<AtomicFile> created = co_await RunBlocking(r.ctx.blocking, std::move(create));
  if (!created.ok()) {
    co_await res.SendError(created.status(), ErrorHeaders(created.status()));
    co_return;
  }
  auto io = co_await asio::this_coro::executor;
  std::shared_ptr<ByteChannel> channel = r.fs.channels().Make(io, kFsChannelBytes);
  auto write = [file = std::move(*created), channel, want_tag]() mutable -> Result<FileStat> {
    // Written blocks are hashed on another thread, which hands them back
    // to the channel for refilling (fs/background_hasher.h); without a
    // tag asked for they go back at once.
    std::optional<BackgroundHasher> hasher;
    if (want_tag) {
      hasher.emplace([channel](std::string block) { channel->Recycle(std::move(block)); });
    }
    for (;;) {
      std::optional<std::string> chunk = channel->Pop();
      if (!chunk) break;
      Status w = file.Write(*chunk);
      if (!w.ok()) {
        channel->Close();
        return w;
      }
      if (hasher) {
        hasher->Add(std::move(*chunk));
      } else {
        channel->Recycle(std::move(*chunk));
      }
    }
    if (channel->closed()) {
      return Status::Error(ErrorCode::kTransport, "the upload ended early");
    }
    return file.Commit(hasher ? std::optional<std::string>(hasher->Finish()) : std::nullopt);
  };
  auto job = PoolJob<Result<FileStat>>::Start(r.fs.jobs(), io, std::move(write));
  Status body = co_await PumpBody(req, *channel, metrics::Daemon().file_bytes_in);
  Result<FileStat> written = co_await job.Wait();
  if (!body.ok()) co_return;  // the client is gone; the temporary was removed
  if (!written.ok()) {
    co_await RefuseMidBody(req, res, written.status());
    co_return;
  }
  Headers h;
  if (written->etag) h.emplace_back("ETag", *written->etag);
  co_await res.SendJson(200, EncodeFileStat(*written), h);
}

}  // namespace

void RegisterFsFileRoutes(Router& router, ApiContext& ctx, FsService& fs) {
  FsRoute r{ctx, fs};
  router.Add("GET", "/v1/fs/file",
             [r](Request& req, Response& res) { return ReadFile(r, req, res); });
  router.Add("PUT", "/v1/fs/file",
             [r](Request& req, Response& res) { return WriteFile(r, req, res); });
}

}  // namespace agentd
