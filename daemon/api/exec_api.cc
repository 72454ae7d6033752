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
  RegisterExecStartRoutes(router, engine);
  RegisterExecPollRoutes(router, ctx, engine);
  RegisterExecOutputRoutes(router, engine);
  RegisterExecEventRoutes(router, engine);
  RegisterExecControlRoutes(router, engine);
}

}  // namespace agentd
