// PUT and GET /v1/fs/tar (docs/PROTOCOL.md, "Trees"): the request body
// streams into libarchive's reader on a job thread, which extracts into a
// staging directory; the job's tar stream comes back through a bounded
// channel to the socket.
// GCC 12 false positive: when it inlines Asio's recycling frame allocator
// (aligned_alloc) into a large coroutine it reports the matching operator
// delete as mismatched.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#include <fcntl.h>

#include "agentd/protocol/fs.h"
#include "agentd/trees/tar_extract.h"
#include "api/fs_route_util.h"
#include "api/pool_job.h"
#include "api/query_reader.h"
#include "api/request_ownership.h"
#include "api/routes.h"
#include "fs/file_ops.h"
#include "fs/tar_create.h"
#include "fs/temp_journal.h"
#include "log/log.h"
#include "metrics/daemon_metrics.h"

namespace agentd {
namespace {

struct TarRoute {
  ApiContext& ctx;
  FsService& fs;
};

// What the upload needs from the blocking pool before the body is read.
struct UploadTarget {
  UniqueFd dir;
  std::vector<RelPath> created;  // directories made for parents=1
};

Result<UploadTarget> PrepareUpload(const ConfinedRoot& root, const RelPath& rel, bool parents,
                                   const Ownership& owner) {
  UploadTarget t;
  if (parents) AGENTD_RETURN_IF_ERROR(MakeParents(root, rel, owner, &t.created));
  Result<UniqueFd> dir = root.OpenAt(rel, O_PATH | O_DIRECTORY);
  if (!dir.ok()) return dir.status();
  t.dir = std::move(*dir);
  return t;
}

// Removes the directories PrepareUpload made, innermost first, as long as
// they are empty (they are, unless someone else wrote there meanwhile).
void UndoCreated(const ConfinedRoot& root, const std::vector<RelPath>& created) {
  for (auto it = created.rbegin(); it != created.rend(); ++it) {
    if (!RemovePath(root, *it, /*recursive=*/false).ok()) break;
  }
}

asio::awaitable<void> Upload(TarRoute r, Request& req, Response& res) {
  QueryReader q(req.query());
  Result<RelPath> rel = CheckPath(r.fs, q.Required("path"));
  bool parents = q.Bool("parents", false);
  ExtractOptions opts;
  opts.stage.keep_setid = q.Bool("setid", false);
  opts.stage.journal = TempJournal::RecordPath;
  const std::string* user = q.String("user");
  const std::string* group = q.String("group");
  Status s = q.Finish();
  if (s.ok() && !rel.ok()) s = rel.status();
  if (s.ok()) {
    auto name = [](const std::string* p) {
      return p ? std::optional<std::string>(*p) : std::nullopt;
    };
    Result<Ownership> owner = ResolveOwnership(name(user), name(group));
    if (owner.ok()) opts.stage.owner = *owner;
    s = owner.status();
  }
  if (!s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  opts.caps = {r.ctx.config.tar_max_entries, r.ctx.config.tar_max_entry_bytes,
               r.ctx.config.tar_max_total_bytes};
  auto prepare = [&]() { return PrepareUpload(r.fs.root(), *rel, parents, opts.stage.owner); };
  Result<UploadTarget> target = co_await RunBlocking(r.ctx.blocking, std::move(prepare));
  if (!target.ok()) {
    co_await res.SendError(target.status());
    co_return;
  }
  auto io = co_await asio::this_coro::executor;
  std::shared_ptr<ByteChannel> channel = r.fs.channels().Make(io, kFsChannelBytes);
  const ConfinedRoot& root = r.fs.root();
  std::string display = rel->display;
  auto extract = [&root, channel, opts, display,
                  t = std::move(*target)]() -> Result<TarUploadResponse> {
    ByteChannel::Source source(channel);
    Result<TarUploadResponse> out = ExtractTar(source, t.dir.get(), display, opts);
    // The answer is known: stop the body pump (what follows the end of
    // the archive, or of a refused one, is discarded by the route).
    channel->Close();
    if (!out.ok()) UndoCreated(root, t.created);
    return out;
  };
  auto job = PoolJob<Result<TarUploadResponse>>::Start(r.fs.jobs(), io, std::move(extract));
  Status body = co_await PumpBody(req, *channel, metrics::Daemon().tar_bytes_in);
  Result<TarUploadResponse> done = co_await job.Wait();
  if (!body.ok()) co_return;  // the client is gone; nothing was kept
  if (!done.ok()) {
    co_await RefuseMidBody(req, res, done.status());
    co_return;
  }
  bool client_there = co_await DiscardBody(req, res, kRefusalDrainBytes);
  if (!client_there) co_return;
  co_await res.SendJson(200, EncodeTarUploadResponse(*done));
}

asio::awaitable<void> Download(TarRoute r, Request& req, Response& res) {
  QueryReader q(req.query());
  Result<RelPath> rel = CheckPath(r.fs, q.Required("path"));
  const std::string* compress = q.String("compress");
  Status s = q.Finish();
  if (s.ok() && !rel.ok()) s = rel.status();
  TarCompression compression = TarCompression::kNone;
  std::string_view type = "application/x-tar";
  if (s.ok() && compress && *compress != "none") {
    if (*compress == "gzip") {
      compression = TarCompression::kGzip;
      type = "application/gzip";
    } else if (*compress == "zstd") {
      compression = TarCompression::kZstd;
      type = "application/zstd";
    } else {
      s = Status::InvalidRequest("compress must be none, gzip or zstd").With("field", "compress");
    }
  }
  if (!s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  auto open = [&]() { return r.fs.root().OpenAt(*rel, O_RDONLY | O_DIRECTORY); };
  Result<UniqueFd> dir = co_await RunBlocking(r.ctx.blocking, std::move(open));
  if (!dir.ok()) {
    co_await res.SendError(dir.status());
    co_return;
  }
  std::optional<uint64_t> unknown_length;
  AGENTD_CO_RETURN_IF_ERROR_VOID(co_await res.Begin(200, type, unknown_length));
  if (req.method() == "HEAD") {
    co_await res.End();
    co_return;
  }
  auto io = co_await asio::this_coro::executor;
  std::shared_ptr<ByteChannel> channel = r.fs.channels().Make(io, kFsChannelBytes);
  std::string display = rel->display;
  auto archive = [channel, compression, display, fd = std::move(*dir)]() -> Status {
    ByteChannel::Sink sink(channel);
    Status st = CreateTar(fd.get(), display, compression, sink);
    if (st.ok()) {
      channel->Finish();
    } else {
      channel->Close();
    }
    return st;
  };
  auto job = PoolJob<Status>::Start(r.fs.jobs(), io, std::move(archive));
  bool sent = co_await SendChannel(*channel, res, &metrics::Daemon().tar_bytes_out);
  Status made = co_await job.Wait();
  if (!made.ok() || !sent) {
    // A stream cut short (no final chunk) is how the client learns of it.
    if (sent) {
      Log(LogLevel::kWarn, "tar download cut short",
          json::Object().Set("path", rel->display).Set("error", made.ToString()));
    }
    co_return;
  }
  co_await res.End();
}

}  // namespace

void RegisterFsTarRoutes(Router& router, ApiContext& ctx, FsService& fs) {
  TarRoute r{ctx, fs};
  router.Add("PUT", "/v1/fs/tar", [r](Request& req, Response& res) { return Upload(r, req, res); });
  router.Add("GET", "/v1/fs/tar",
             [r](Request& req, Response& res) { return Download(r, req, res); });
}

}  // namespace agentd
