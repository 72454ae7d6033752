// POST /v1/fs/edit (docs/PROTOCOL.md, "Edit"): exact text and line-range
// edits of one file, applied together by one atomic replace or not at all.
#include "agentd/protocol/edit.h"
#include "api/fs_route_util.h"
#include "api/json_body.h"
#include "api/query_reader.h"
#include "api/routes.h"
#include "fs/file_edit.h"

namespace agentd {
namespace {

// The precondition: the body's if_match or the If-Match header (both given
// must agree), and If-None-Match.
Result<Precondition> EditPrecondition(const Request& req, const EditRequest& edit) {
  const std::string* header = req.Header("if-match");
  if (edit.if_match && header && *header != *edit.if_match) {
    return std::move(Status::InvalidRequest("if_match and the If-Match header name different tags")
                         .With("field", "if_match"));
  }
  const std::string* if_match = edit.if_match ? &*edit.if_match : header;
  return ParsePrecondition(if_match, req.Header("if-none-match"));
}

asio::awaitable<void> Edit(FsRoute r, Request& req, Response& res) {
  Result<json::Value> doc = co_await ReadJsonWithoutQuery(req);
  Result<EditRequest> edit = doc.ok() ? DecodeEditRequest(*doc) : doc.status();
  Result<RelPath> rel = edit.ok() ? r.fs.policy().Check(edit->path) : edit.status();
  Result<Precondition> pre = rel.ok() ? EditPrecondition(req, *edit) : rel.status();
  if (!pre.ok()) {
    co_await res.SendError(pre.status());
    co_return;
  }
  auto work = [&]() { return EditFile(r.fs.root(), *rel, *edit, *pre, r.fs.tags()); };
  Result<EditResponse> done = co_await RunBlocking(r.fs.jobs(), std::move(work));
  if (!done.ok()) {
    co_await res.SendError(done.status(), ErrorHeaders(done.status()));
    co_return;
  }
  Headers h{{"ETag", done->etag}};
  co_await res.SendJson(200, EncodeEditResponse(*done), h);
}

}  // namespace

void RegisterFsEditRoutes(Router& router, ApiContext& ctx, FsService& fs) {
  FsRoute r{ctx, fs};
  router.Add("POST", "/v1/fs/edit", [r](Request& req, Response& res) { return Edit(r, req, res); });
}

}  // namespace agentd
