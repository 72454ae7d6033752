// The Streamable HTTP transport of `agentctl mcp --listen HOST:PORT`
// (MCP specification, "Transports"): one endpoint, /mcp. A POST carries
// one JSON-RPC message; a request is answered with a text/event-stream of
// its progress notifications and its answer when the client accepts one,
// else with application/json; a notification or response gets 202. The
// initialize answer carries Mcp-Session-Id, which every later request
// names; DELETE ends the session. GET is 405 (this server starts no
// conversation of its own).
//
// Guards: an Origin header must name this host (localhost, 127.0.0.1,
// [::1]) or an --allow-origin (DNS rebinding); a listener off loopback
// needs --http-token-file, whose token clients send as a bearer token.
#pragma once

#include <string>
#include <vector>

#include "agentd/client/options.h"
#include "mcp_session.h"

namespace agentd::cli::mcp {

struct HttpOptions {
  std::string listen;  // HOST:PORT, or PORT for 127.0.0.1
  std::vector<std::string> allowed_origins;
  std::string token;  // empty: no Authorization needed (loopback only)
};

// Serves until SIGINT or SIGTERM; answers the process exit status. Prints
// "listening on http://HOST:PORT/mcp" on stderr once bound.
int ServeHttp(const client::ClientOptions& client_options, McpOptions options, HttpOptions http);

}  // namespace agentd::cli::mcp
