// The stdio transport of `agentctl mcp`: newline-delimited JSON-RPC on
// stdin and stdout (the MCP specification's stdio transport). Nothing but
// JSON-RPC messages goes to stdout; diagnostics go to stderr.
#pragma once

#include "agentd/client/options.h"
#include "mcp_session.h"

namespace agentd::cli::mcp {

// Serves one session until stdin ends; answers the process exit status.
// Calls in flight when stdin ends are left to the daemon's own rules
// (their execs run on to their timeouts).
int ServeStdio(const client::ClientOptions& client_options, McpOptions options);

}  // namespace agentd::cli::mcp
