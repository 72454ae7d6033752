// The gate of a draining daemon (docs/PROTOCOL.md, "Health"): after SIGTERM
// nothing new starts (execs, runs, resets, tunnels, watches), so the drain
// ends; reads, polls, acks and file operations still answer, so a client
// can collect what the killed execs left.
#include "api/routes.h"

namespace agentd {
namespace {

bool StartsWork(const Request& req) {
  std::string_view path = req.path();
  std::string_view method = req.method();
  auto under = [&path](std::string_view prefix) {
    return path.size() > prefix.size() && path.substr(0, prefix.size()) == prefix;
  };
  if (method == "PUT" && under("/v1/execs/") &&
      path.find('/', std::string_view("/v1/execs/").size()) == std::string_view::npos) {
    return true;
  }
  if (method == "POST" && (path == "/v1/run" || path == "/v1/reset")) return true;
  // A context's create, runs and reset (its delete only ends work).
  if (method == "POST" && (path == "/v1/contexts" || under("/v1/contexts/"))) return true;
  if (path == "/v1/fs/watch") return true;
  return under("/v1/ports/") && path.size() > 8 && path.substr(path.size() - 8) == "/connect";
}

}  // namespace

void RegisterDrainGate(Router& router, ApiContext& ctx) {
  router.AddGate([&ctx](const Request& req) {
    if (!ctx.draining() || !StartsWork(req)) return Status::Ok();
    return Status::Error(ErrorCode::kShuttingDown,
                         "the daemon is stopping (SIGTERM) and starts nothing new; start it on "
                         "another guest");
  });
}

}  // namespace agentd
