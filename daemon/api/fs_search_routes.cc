// GET /v1/fs/search and GET /v1/fs/glob (docs/PROTOCOL.md, "Search",
// "Glob"). Search: the query is decoded and
// the pattern compiled on the io thread; the start is opened on the
// blocking pool (so a missing path is an ordinary error answer); then the
// search runs as a long job whose NDJSON comes back through a bounded
// channel, like a tar download. Glob answers one JSON object, made on the
// long-job pool (a walk of a large tree is a long job).
// GCC 12 false positive: see fs_tar_routes.cc.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>

#include "agentd/trees/posix_error.h"
#include "api/fs_route_util.h"
#include "api/pool_job.h"
#include "api/query_reader.h"
#include "api/routes.h"
#include "api/search_query.h"
#include "log/log.h"
#include "search/tree_glob.h"
#include "search/tree_search.h"
#include "search/wildmatch.h"

namespace agentd {
namespace {

asio::awaitable<void> Search(FsRoute r, Request& req, Response& res) {
  QueryReader q(req.query());
  SearchQuery sq = ReadSearchQuery(q);
  Result<RelPath> rel = CheckPath(r.fs, sq.path);
  Status s = q.Finish();
  if (s.ok() && !rel.ok()) s = rel.status();
  std::shared_ptr<const LineMatcher> matcher;
  if (s.ok()) {
    Result<std::shared_ptr<const LineMatcher>> m =
        LineMatcher::Compile(*sq.pattern, LineMatcherOptions{sq.fixed, sq.ignore_case});
    if (m.ok()) matcher = *m;
    s = m.status();
  }
  if (!s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  // A regular file or a directory; anything else (a FIFO, a device) is
  // refused here, before the stream starts.
  auto open = [&]() -> Result<UniqueFd> {
    Result<UniqueFd> fd = r.fs.root().OpenAt(*rel, O_RDONLY | O_NONBLOCK);
    if (!fd.ok()) return fd;
    struct stat st;
    if (::fstat(fd->get(), &st) != 0) return PosixError(errno, "cannot stat", rel->display);
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
      return Status::Error(ErrorCode::kNotADirectory,
                           rel->display + " is neither a directory nor a regular file")
          .With("path", rel->display);
    }
    return fd;
  };
  Result<UniqueFd> start = co_await RunBlocking(r.ctx.blocking, std::move(open));
  if (!start.ok()) {
    co_await res.SendError(start.status());
    co_return;
  }
  std::optional<uint64_t> unknown_length;
  AGENTD_CO_RETURN_IF_ERROR_VOID(co_await res.Begin(200, "application/x-ndjson", unknown_length));
  if (req.method() == "HEAD") {
    co_await res.End();
    co_return;
  }
  auto io = co_await asio::this_coro::executor;
  std::shared_ptr<ByteChannel> channel = r.fs.channels().Make(io, kFsChannelBytes);
  auto search = std::make_shared<TreeSearch>(r.fs.root(), *rel, r.fs.policy().Display(*rel),
                                             std::move(matcher), std::move(sq.options));
  auto job_fn = [channel, search, fd = std::move(*start)]() mutable -> Result<SearchSummary> {
    Result<SearchSummary> sum = search->Run(
        std::move(fd), [&](std::string block) { return channel->Push(std::move(block)); },
        [&] { return channel->TakeSpare(); });
    if (sum.ok()) {
      channel->Finish();
    } else {
      channel->Close();
    }
    return sum;
  };
  auto job = PoolJob<Result<SearchSummary>>::Start(r.fs.jobs(), io, std::move(job_fn));
  bool sent = co_await SendChannel(*channel, res);
  Result<SearchSummary> done = co_await job.Wait();
  if (!done.ok() || !sent) {
    // A stream without its summary line (and final chunk) is how the
    // client learns it was cut short.
    if (sent) {
      Log(LogLevel::kWarn, "search cut short",
          json::Object().Set("path", rel->display).Set("error", done.status().ToString()));
    }
    co_return;
  }
  co_await res.End();
}

// Brace sets of one glob pattern expand to at most this many patterns.
constexpr size_t kMaxGlobPatterns = 256;

asio::awaitable<void> Glob(FsRoute r, Request& req, Response& res) {
  QueryReader q(req.query());
  Result<RelPath> rel = CheckPath(r.fs, q.Required("path"));
  const std::string* pattern = q.Required("pattern");
  GlobOptions opts;
  ReadWalkQuery(q, &opts.walk, &opts.max_results, &opts.timeout);
  Status s = q.Finish();
  if (s.ok() && !rel.ok()) s = rel.status();
  if (s.ok()) {
    bool too_many = false;
    if (pattern->empty() || (*pattern)[0] == '/') {
      s = Status::InvalidRequest("pattern must be a non-empty path relative to path")
              .With("field", "pattern");
    } else {
      opts.patterns = ExpandBraces(*pattern, kMaxGlobPatterns, &too_many);
      if (too_many) {
        s = Status::InvalidRequest("pattern's brace sets expand to more than " +
                                   std::to_string(kMaxGlobPatterns) + " patterns")
                .With("field", "pattern")
                .With("limit", kMaxGlobPatterns);
      }
    }
  }
  if (!s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  std::string display = r.fs.policy().Display(*rel);
  JsonJob work = [&]() -> Result<json::Value> {
    Result<UniqueFd> dir = r.fs.root().OpenAt(*rel, O_RDONLY | O_DIRECTORY);
    if (!dir.ok()) return dir.status();
    Result<GlobResponse> out = RunGlob(r.fs.root(), *rel, display, dir->get(), opts);
    if (!out.ok()) return out.status();
    return EncodeGlobResponse(*out);
  };
  co_await AnswerFromPool(r.fs.jobs(), res, std::move(work));
}

}  // namespace

void RegisterFsSearchRoutes(Router& router, ApiContext& ctx, FsService& fs) {
  FsRoute r{ctx, fs};
  router.Add("GET", "/v1/fs/search",
             [r](Request& req, Response& res) { return Search(r, req, res); });
  router.Add("GET", "/v1/fs/glob", [r](Request& req, Response& res) { return Glob(r, req, res); });
}

}  // namespace agentd
