// Metadata routes (docs/PROTOCOL.md, "Files"): GET /v1/fs/stat,
// GET /v1/fs/list, POST /v1/fs/mkdir, POST /v1/fs/rename, DELETE /v1/fs,
// GET /v1/fs/realpath. Each decodes and checks on the io thread, then does
// its system calls on the blocking pool.
#include "agentd/protocol/fs.h"
#include "api/fs_route_util.h"
#include "api/json_body.h"
#include "api/query_reader.h"
#include "api/recheck_waits.h"
#include "api/request_ownership.h"
#include "api/routes.h"
#include "api/wait_slot.h"
#include "fs/file_ops.h"

namespace agentd {
namespace {

asio::awaitable<void> Stat(FsRoute r, Request& req, Response& res) {
  QueryReader q(req.query());
  Result<RelPath> rel = CheckPath(r.fs, q.Required("path"));
  bool follow = q.Bool("follow", false);
  std::optional<std::string> until = q.Choice("until", {"exists", "gone"});
  std::optional<uint64_t> wait_ms = q.Number("wait_ms", 0, kMaxConditionWaitMs);
  if (wait_ms && !until) {
    q.Fail(
        Status::InvalidRequest("query parameter \"wait_ms\" needs until").With("field", "wait_ms"));
  }
  Status s = q.Finish();
  if (s.ok() && !rel.ok()) s = rel.status();
  if (!s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  if (until) {
    co_await AnswerPathWait(r.ctx, r.fs, req, res, *rel, follow, *until == "gone",
                            wait_ms.value_or(0));
    co_return;
  }
  auto work = [&]() { return StatWithTag(r.fs.root(), *rel, follow, r.fs.tags()); };
  Result<FileStat> st = co_await RunBlocking(r.ctx.blocking, std::move(work));
  if (!st.ok()) {
    co_await res.SendError(st.status());
    co_return;
  }
  Headers h;
  if (st->etag) h.emplace_back("ETag", *st->etag);
  co_await res.SendJson(200, EncodeFileStat(*st), h);
}

asio::awaitable<void> List(FsRoute r, Request& req, Response& res) {
  QueryReader q(req.query());
  Result<RelPath> rel = CheckPath(r.fs, q.Required("path"));
  Status s = q.Finish();
  if (s.ok() && !rel.ok()) s = rel.status();
  if (!s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  JsonJob work = [&]() -> Result<json::Value> {
    Result<std::vector<FileStat>> entries = ListDir(r.fs.root(), *rel);
    if (!entries.ok()) return entries.status();
    return EncodeListResponse(ListResponse{std::move(*entries)});
  };
  co_await AnswerFromPool(r.ctx.blocking, res, std::move(work));
}

asio::awaitable<void> Mkdir(FsRoute r, Request& req, Response& res) {
  Result<json::Value> doc = co_await ReadJsonWithoutQuery(req);
  Result<MkdirRequest> mk = doc.ok() ? DecodeMkdirRequest(*doc) : doc.status();
  Result<RelPath> rel = mk.ok() ? r.fs.policy().Check(mk->path) : mk.status();
  Result<Ownership> owner = rel.ok() ? ResolveOwnership(mk->user, mk->group) : rel.status();
  if (!owner.ok()) {
    co_await res.SendError(owner.status());
    co_return;
  }
  JsonJob work = [&]() -> Result<json::Value> {
    Result<FileStat> st = MakeDir(r.fs.root(), *rel, mk->mode, mk->parents, *owner);
    if (!st.ok()) return st.status();
    return EncodeFileStat(*st);
  };
  co_await AnswerFromPool(r.ctx.blocking, res, std::move(work));
}

asio::awaitable<void> Rename(FsRoute r, Request& req, Response& res) {
  Result<json::Value> doc = co_await ReadJsonWithoutQuery(req);
  Result<RenameRequest> mv = doc.ok() ? DecodeRenameRequest(*doc) : doc.status();
  Result<RelPath> from = mv.ok() ? r.fs.policy().Check(mv->from) : mv.status();
  Result<RelPath> to = from.ok() ? r.fs.policy().Check(mv->to) : from.status();
  Result<Precondition> pre = to.ok() ? PreconditionOf(req) : to.status();
  if (!pre.ok()) {
    co_await res.SendError(pre.status());
    co_return;
  }
  JsonJob work = [&]() -> Result<json::Value> {
    Guard guard{r.fs.tags(), *pre};
    AGENTD_RETURN_IF_ERROR(
        RenamePath(r.fs.root(), *from, *to, mv->overwrite, pre->empty() ? nullptr : &guard));
    Result<FileStat> st = StatPath(r.fs.root(), *to, /*follow=*/false);
    if (!st.ok()) return st.status();
    return EncodeFileStat(*st);
  };
  co_await AnswerFromPool(r.ctx.blocking, res, std::move(work));
}

asio::awaitable<void> Delete(FsRoute r, Request& req, Response& res) {
  QueryReader q(req.query());
  Result<RelPath> rel = CheckPath(r.fs, q.Required("path"));
  bool recursive = q.Bool("recursive", false);
  Status s = q.Finish();
  if (s.ok() && !rel.ok()) s = rel.status();
  Result<Precondition> pre = PreconditionOf(req);
  if (s.ok()) s = pre.status();
  if (!s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  JsonJob work = [&]() -> Result<json::Value> {
    Guard guard{r.fs.tags(), *pre};
    Result<uint64_t> removed =
        RemovePath(r.fs.root(), *rel, recursive, pre->empty() ? nullptr : &guard);
    if (!removed.ok()) return removed.status();
    return EncodeDeleteResponse(DeleteResponse{rel->display, *removed});
  };
  co_await AnswerFromPool(r.ctx.blocking, res, std::move(work));
}

asio::awaitable<void> Realpath(FsRoute r, Request& req, Response& res) {
  QueryReader q(req.query());
  Result<RelPath> rel = CheckPath(r.fs, q.Required("path"));
  Status s = q.Finish();
  if (s.ok() && !rel.ok()) s = rel.status();
  if (!s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  JsonJob work = [&]() -> Result<json::Value> {
    Result<RelPath> real = RealPath(r.fs.root(), *rel);
    if (!real.ok()) return real.status();
    return EncodeRealpathResponse(RealpathResponse{r.fs.policy().Display(*real)});
  };
  co_await AnswerFromPool(r.ctx.blocking, res, std::move(work));
}

}  // namespace

void RegisterFsMetaRoutes(Router& router, ApiContext& ctx, FsService& fs) {
  FsRoute r{ctx, fs};
  router.Add("GET", "/v1/fs/stat", [r](Request& req, Response& res) { return Stat(r, req, res); });
  router.Add("GET", "/v1/fs/list", [r](Request& req, Response& res) { return List(r, req, res); });
  router.Add("POST", "/v1/fs/mkdir",
             [r](Request& req, Response& res) { return Mkdir(r, req, res); });
  router.Add("POST", "/v1/fs/rename",
             [r](Request& req, Response& res) { return Rename(r, req, res); });
  router.Add("DELETE", "/v1/fs", [r](Request& req, Response& res) { return Delete(r, req, res); });
  router.Add("GET", "/v1/fs/realpath",
             [r](Request& req, Response& res) { return Realpath(r, req, res); });
}

}  // namespace agentd
