// One MCP session: the lifecycle (initialize, notifications/initialized,
// ping), tools/list and tools/call, progress and cancellation, over any
// transport. The transport hands in each incoming message with the Peer
// that answers go to: stdio has one Peer for the whole session; Streamable
// HTTP has one per POST (its JSON answer or event stream).
//
// Thread-safety: a session and its tool calls live on one executor (the
// AsyncClient's); Handle is called there.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "agentd/client/async_client.h"
#include "mcp_jsonrpc.h"
#include "mcp_tools.h"

namespace agentd::cli::mcp {

// Where one incoming message's answers go.
class Peer {
 public:
  virtual ~Peer() = default;
  // One JSON-RPC message (a progress notification or the answer).
  virtual void Send(std::string message) = 0;
  // After the answer to a request (or at once when nothing will be sent).
  virtual void Done() {}
};

struct McpOptions {
  size_t max_result_bytes = 64 * 1024;
};

// The protocol revisions this server speaks, newest first.
const std::vector<std::string_view>& SupportedProtocolVersions();

class McpSession : public std::enable_shared_from_this<McpSession> {
 public:
  // Made with std::make_shared: tool calls keep the session alive.
  McpSession(client::AsyncClient& client, McpOptions options)
      : client_(client), options_(options) {}

  // Handles one message. Answers whether a JSON-RPC answer follows on
  // `peer` (false for notifications and responses: Done is called at once).
  bool Handle(std::string_view text, std::shared_ptr<Peer> peer);

  bool initialized() const { return initialized_; }
  const std::string& protocol_version() const { return protocol_version_; }

 private:
  void HandleRequest(Message m, std::shared_ptr<Peer> peer);
  void HandleNotification(const Message& m);
  json::Value Initialize(const json::Object& params);
  void CallTool(Message m, std::shared_ptr<Peer> peer);
  void Cancel(const json::Value& request_id);

  client::AsyncClient& client_;
  McpOptions options_;
  bool initialize_answered_ = false;
  bool initialized_ = false;
  std::string protocol_version_;
  // Calls in flight by their request id (canonical JSON of the id).
  std::map<std::string, std::shared_ptr<CallState>> calls_;
};

}  // namespace agentd::cli::mcp
