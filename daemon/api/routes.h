// Route registration, one function per route group (one file each).
#pragma once

#include "api/api_context.h"
#include "server/router.h"

namespace agentd {

class ExecEngine;
class FsService;

void RegisterBootstrapRoutes(Router& router, ApiContext& ctx);
void RegisterHealthRoutes(Router& router, ApiContext& ctx);
// Also wires ctx.exec_counts (health's busy and execs) to the engine.
void RegisterExecRoutes(Router& router, ApiContext& ctx, ExecEngine& engine);
// /v1/contexts (api/context_routes.cc); also wires ctx.contexts (health).
void RegisterContextRoutes(Router& router, ApiContext& ctx, ExecEngine& engine);
// POST /v1/run; also wires ctx.runtimes and ctx.limits (health) to the engine.
void RegisterRunRoutes(Router& router, ApiContext& ctx, ExecEngine& engine);
// GET /v1/metrics.
void RegisterMetricsRoutes(Router& router);
// Router::Dispatch, counting the request in the metrics (route pattern,
// method, status, duration).
asio::awaitable<void> DispatchCounted(const Router& router, Request& req, Response& res);
// docs/PROTOCOL.md, "Files" (api/fs_*_routes.cc).
void RegisterFsFileRoutes(Router& router, ApiContext& ctx, FsService& fs);
void RegisterFsMetaRoutes(Router& router, ApiContext& ctx, FsService& fs);
void RegisterFsEditRoutes(Router& router, ApiContext& ctx, FsService& fs);
void RegisterFsTarRoutes(Router& router, ApiContext& ctx, FsService& fs);
// GET /v1/fs/search and GET /v1/fs/glob (docs/PROTOCOL.md, "Search", "Glob").
void RegisterFsSearchRoutes(Router& router, ApiContext& ctx, FsService& fs);
// docs/PROTOCOL.md, "Watch" and "Ports".
void RegisterFsWatchRoutes(Router& router, ApiContext& ctx, FsService& fs, asio::io_context& io);
// `io` runs the tunnels an upgrade in place handed over (ctx.streams).
void RegisterPortRoutes(Router& router, ApiContext& ctx, asio::io_context& io);
// POST /v1/reset and the gate that refuses other routes while the guest is
// being reset or is quarantined (docs/PROTOCOL.md, "Reuse"); also sets
// ctx.reuse (health).
void RegisterResetRoutes(Router& router, ApiContext& ctx, GuestReset& reuse);
// The gate that refuses new work (exec and run starts, resets, tunnels,
// watches) with 503 shutting_down while ctx.draining() (api/drain_gate.cc).
void RegisterDrainGate(Router& router, ApiContext& ctx);

}  // namespace agentd
