// The tools `agentctl mcp` offers a model: each one row (name, model-facing
// description, input JSON Schema, annotations, handler), like agentctl's
// command table. Handlers are coroutines on the session's executor that
// drive the guest through the AsyncClient and answer a ToolOutput; a
// daemon error is a tool error (isError) carrying its code and message,
// never a protocol error.
#pragma once

#include <asio.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/client/async_client.h"
#include "agentd/protocol/json.h"

namespace agentd::cli::mcp {

struct ToolOutput {
  std::string text;         // for the model
  json::Object structured;  // for the program (structuredContent)
  bool is_error = false;
};

// One tools/call in flight. `cancel` is set by a handler once it started
// something that cancellation must stop (an exec to kill); the session
// calls it when notifications/cancelled names the request.
struct CallState {
  bool cancelled = false;
  std::function<void()> cancel;
};

struct ToolContext {
  client::AsyncClient& client;
  size_t max_result_bytes;
  std::shared_ptr<CallState> call;
  // Absent unless the request carried _meta.progressToken. `progress`
  // must grow from one notification to the next.
  std::function<void(double progress, std::string message)> progress;
};

using ToolHandler = asio::awaitable<ToolOutput> (*)(ToolContext& ctx, const json::Object& args);

struct Tool {
  std::string_view name;
  std::string_view title;
  std::string_view description;
  std::string_view input_schema;  // JSON text
  bool read_only;
  bool destructive;
  bool idempotent;
  ToolHandler run;
};

// The tool table, and its schemas parsed once.
const std::vector<Tool>& Tools();
const Tool* FindTool(std::string_view name);
const json::Value& InputSchema(const Tool& tool);
// The tools/list entry of one tool.
json::Object ToolListing(const Tool& tool);

// The tool error for a daemon (or client) failure: "error: CODE: message".
ToolOutput ErrorOutput(const Status& status);

// Argument readers for arguments already checked against the schema.
std::optional<std::string> StringArg(const json::Object& args, std::string_view name);
std::optional<int64_t> IntArg(const json::Object& args, std::string_view name);
bool BoolArg(const json::Object& args, std::string_view name, bool fallback);

// Handlers (mcp_tool_exec.cc, mcp_tool_files.cc).
asio::awaitable<ToolOutput> ExecTool(ToolContext& ctx, const json::Object& args);
asio::awaitable<ToolOutput> RunCodeTool(ToolContext& ctx, const json::Object& args);
asio::awaitable<ToolOutput> ReadFileTool(ToolContext& ctx, const json::Object& args);
asio::awaitable<ToolOutput> WriteFileTool(ToolContext& ctx, const json::Object& args);
asio::awaitable<ToolOutput> EditFileTool(ToolContext& ctx, const json::Object& args);
asio::awaitable<ToolOutput> ListDirTool(ToolContext& ctx, const json::Object& args);
asio::awaitable<ToolOutput> StatTool(ToolContext& ctx, const json::Object& args);
asio::awaitable<ToolOutput> SearchTool(ToolContext& ctx, const json::Object& args);
asio::awaitable<ToolOutput> GlobTool(ToolContext& ctx, const json::Object& args);

}  // namespace agentd::cli::mcp
