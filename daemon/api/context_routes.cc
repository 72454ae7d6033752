// /v1/contexts (docs/PROTOCOL.md, "Contexts"): create, list, run in,
// reset and delete stateful contexts, through run/context_table.h.
#include <memory>

#include "agentd/protocol/context.h"
#include "api/json_body.h"
#include "api/query_reader.h"
#include "api/routes.h"
#include "log/log.h"
#include "run/context_table.h"

namespace agentd {
namespace {

json::Array EncodeContextList(const std::vector<ContextInfo>& list) {
  json::Array out;
  for (const ContextInfo& c : list) out.emplace_back(EncodeContextInfo(c));
  return out;
}

asio::awaitable<void> CreateContext(ContextTable& table, Request& req, Response& res) {
  Result<json::Value> doc = co_await ReadJsonWithoutQuery(req);
  Result<ContextCreateRequest> create = doc.ok() ? DecodeContextCreateRequest(*doc) : doc.status();
  if (!create.ok()) {
    co_await res.SendError(create.status());
    co_return;
  }
  Result<ContextTable::Created> made = co_await table.Create(std::move(*create));
  if (!made.ok()) {
    co_await res.SendError(made.status());
    co_return;
  }
  co_await res.SendJson(made->created ? 201 : 200, EncodeContextInfo(made->info));
}

asio::awaitable<void> ListContexts(ContextTable& table, Request& req, Response& res) {
  if (Status s = QueryReader(req.query()).Finish(); !s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  json::Object body;
  body.Set("contexts", EncodeContextList(table.List()));
  body.Set("max_contexts", table.max_contexts());
  co_await res.SendJson(200, body);
}

asio::awaitable<void> GetContext(ContextTable& table, Request& req, Response& res) {
  if (Status s = QueryReader(req.query()).Finish(); !s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  Result<std::shared_ptr<CodeContext>> found = table.Find(std::string(req.Param("id")));
  if (!found.ok()) {
    co_await res.SendError(found.status());
    co_return;
  }
  co_await res.SendJson(200, EncodeContextInfo((*found)->Info()));
}

// The run goes on when the client leaves: its answer waits for a retry
// with the same run_id.
asio::awaitable<void> RunInContext(ContextTable& table, Request& req, Response& res) {
  Result<json::Value> doc = co_await ReadJsonWithoutQuery(req);
  Result<ContextRunRequest> run = doc.ok() ? DecodeContextRunRequest(*doc) : doc.status();
  if (!run.ok()) {
    co_await res.SendError(run.status());
    co_return;
  }
  Result<std::shared_ptr<CodeContext>> found = table.Find(std::string(req.Param("id")));
  if (!found.ok()) {
    co_await res.SendError(found.status());
    co_return;
  }
  std::shared_ptr<CodeContext> context = *found;
  Result<json::Value> answer = co_await context->Run(std::move(*run));
  if (!answer.ok()) {
    co_await res.SendError(answer.status());
    co_return;
  }
  co_await res.SendJson(200, std::move(*answer));
}

// Reset and delete: the same route shape around one table call that ends
// the interpreter (and, for reset, starts a fresh one).
using EndContextCall =
    asio::awaitable<Result<ContextInfo>> (ContextTable::*)(const std::string& id);

asio::awaitable<void> EndContext(ContextTable& table, EndContextCall call, Request& req,
                                 Response& res) {
  if (Status s = QueryReader(req.query()).Finish(); !s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  Result<ContextInfo> info = co_await (table.*call)(std::string(req.Param("id")));
  if (!info.ok()) {
    co_await res.SendError(info.status());
    co_return;
  }
  co_await res.SendJson(200, EncodeContextInfo(*info));
}

}  // namespace

void RegisterContextRoutes(Router& router, ApiContext& ctx, ExecEngine& engine) {
  auto table = std::make_shared<ContextTable>(
      engine, ctx.blocking,
      CodeRunOptions{.default_timeout_sec = ctx.config.run_timeout_sec,
                     .workdir = ctx.config.engine.workdir,
                     .scan_max_entries = ctx.config.scan_max_entries,
                     .scan_max_ms = ctx.config.scan_max_ms,
                     .changed_files_max = ctx.config.changed_files_max,
                     .shared_driver_dir = ctx.config.run_driver_dir,
                     .context_notes_dir = engine.state_dir() + "/contexts"},
      ctx.config.max_contexts);
  ctx.contexts = [table] { return EncodeContextList(table->List()); };
  ctx.hand_over_contexts = [table](std::vector<int>& fds) { return table->HandOver(fds); };
  ctx.context_blocker = [table] { return table->UpgradeBlocker(); };
  if (!ctx.handed_contexts.empty()) {
    std::vector<std::string> dropped = table->Adopt(ctx.handed_contexts);
    json::Array why;
    for (std::string& d : dropped) why.emplace_back(std::move(d));
    Log(dropped.empty() ? LogLevel::kInfo : LogLevel::kWarn, "contexts taken over",
        json::Object()
            .Set("contexts", static_cast<int64_t>(ctx.handed_contexts.size()))
            .Set("dropped", std::move(why)));
    ctx.handed_contexts.clear();
  }
  table->TakeBackLost();
  router.Add("POST", "/v1/contexts",
             [table](Request& req, Response& res) { return CreateContext(*table, req, res); });
  router.Add("GET", "/v1/contexts",
             [table](Request& req, Response& res) { return ListContexts(*table, req, res); });
  router.Add("GET", "/v1/contexts/{id}",
             [table](Request& req, Response& res) { return GetContext(*table, req, res); });
  router.Add("DELETE", "/v1/contexts/{id}", [table](Request& req, Response& res) {
    return EndContext(*table, &ContextTable::Delete, req, res);
  });
  router.Add("POST", "/v1/contexts/{id}/run",
             [table](Request& req, Response& res) { return RunInContext(*table, req, res); });
  router.Add("POST", "/v1/contexts/{id}/reset", [table](Request& req, Response& res) {
    return EndContext(*table, &ContextTable::Reset, req, res);
  });
}

}  // namespace agentd
