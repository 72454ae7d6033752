#include "api/exec_api.h"

#include "api/routes.h"

namespace agentd {

Status CheckCursor(std::string_view field, uint64_t cursor, const OutputLog& log) {
  if (cursor <= log.next()) return Status::Ok();
  return Status::InvalidRequest(std::string(field) + " " + std::to_string(cursor) +
                                " is past the end of the stream (" + std::to_string(log.next()) +
                                " bytes)")
      .With("field", std::string(field))
      .With("next", log.next());
}

void RegisterExecRoutes(Router& router, ApiContext& ctx, ExecEngine& engine) {
  ctx.exec_counts = [&engine] {
    ExecTotals t = engine.Totals();
    return ExecCounts{t.busy, t.records};
  };
  ctx.privileged_generation = [&engine] { return engine.privileged_generation(); };
  ctx.profiles = [&engine] {
    const ExecEngineOptions& o = engine.options();
    json::Object restricted;
    const RefusalFilter* filter = engine.refusal_filter();
    restricted.Set("available", filter != nullptr || o.restricted_without_seccomp);
    restricted.Set("seccomp", filter != nullptr);
    restricted.Set("user", o.restricted_user);
    if (filter) {
      json::Array refused;
      for (const std::string& name : filter->refused) refused.emplace_back(name);
      restricted.Set("refused_syscalls", std::move(refused));
    } else {
      restricted.Set("why", engine.restricted_unavailable());
    }
    json::Array readonly;
    for (const std::string& p : engine.readonly_paths()) readonly.emplace_back(p);
    restricted.Set("readonly_paths", std::move(readonly));
    if (!engine.readonly_unavailable().empty()) {
      restricted.Set("readonly_why", engine.readonly_unavailable());
    }
    return json::Object()
        .Set("default", o.default_profile)
        .Set("restricted", std::move(restricted));
  };
  RegisterExecStartRoutes(router, engine);
  RegisterExecPollRoutes(router, ctx, engine);
  RegisterExecOutputRoutes(router, engine);
  RegisterExecEventRoutes(router, engine);
  RegisterExecControlRoutes(router, engine);
}

}  // namespace agentd
