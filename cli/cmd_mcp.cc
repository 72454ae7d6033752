// agentctl mcp: an MCP server that drives one guest (docs/EMBEDDING.md,
// "Any MCP-capable agent"): stdio by default; Streamable HTTP with --listen.
#include <charconv>

#include "commands.h"
#include "exit_codes.h"
#include "mcp_cut.h"
#include "mcp_http.h"
#include "mcp_stdio.h"

namespace agentd::cli {

int CmdMcp(Context& ctx) {
  const ParsedArgs& args = ctx.args();
  if (ctx.globals().token_on_command_line) {
    // Any user on the host can read a command line (ps); an MCP server
    // lives as long as the agent does.
    return ctx.out().UsageError(
        "mcp takes the token from --token-file, AGENTD_TOKEN_FILE or AGENTD_TOKEN, never --token");
  }
  mcp::McpOptions options;
  if (std::optional<std::string> max = args.Get("max-result-bytes")) {
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(max->data(), max->data() + max->size(), n);
    if (max->empty() || ec != std::errc() || end != max->data() + max->size() ||
        n < mcp::kMinResultBytes) {
      return ctx.out().UsageError("--max-result-bytes needs a whole number of at least " +
                                  std::to_string(mcp::kMinResultBytes));
    }
    options.max_result_bytes = n;
  }
  client::ClientOptions client_options = ctx.client_options();
  if (std::optional<std::string> listen = args.Get("listen")) {
    mcp::HttpOptions http;
    http.listen = *listen;
    http.allowed_origins = args.All("allow-origin");
    if (std::optional<std::string> file = args.Get("http-token-file")) {
      Result<std::string> token = ReadTokenFile(*file);
      if (!token.ok()) return ctx.out().Fail(token.status(), kExitUsage);
      if (token->empty()) return ctx.out().UsageError("--http-token-file " + *file + " is empty");
      http.token = *token;
    }
    return mcp::ServeHttp(client_options, options, std::move(http));
  }
  if (args.Has("allow-origin") || args.Has("http-token-file"))
    return ctx.out().UsageError("--allow-origin and --http-token-file go with --listen");
  return mcp::ServeStdio(client_options, options);
}

}  // namespace agentd::cli
