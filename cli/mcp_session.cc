#include "mcp_session.h"

#include "mcp_cut.h"
#include "mcp_schema.h"

namespace agentd::cli::mcp {
namespace {

constexpr std::string_view kInstructions =
    "These tools drive one agentd guest: a sandboxed machine. exec runs shell commands, "
    "run_code runs snippets, and the file tools read, write and search the guest's files. "
    "Paths are guest paths. Every result is cut to a bound and says so when it is.";

json::Object Capabilities() {
  json::Object tools;
  tools.Set("listChanged", false);
  json::Object caps;
  caps.Set("tools", std::move(tools));
  return caps;
}

json::Object ToolResult(ToolOutput out, size_t max) {
  CutStructured(out.structured, max);
  json::Object text;
  text.Set("type", "text").Set("text", CutText(std::move(out.text), max));
  json::Object r;
  r.Set("content", json::Array{std::move(text)})
      .Set("structuredContent", std::move(out.structured))
      .Set("isError", out.is_error);
  return r;
}

// A parameter list, not a lambda's captures: the coroutine frame owns
// them for as long as the call runs.
asio::awaitable<ToolOutput> RunTool(client::AsyncClient& client, const Tool* tool, json::Value args,
                                    std::shared_ptr<CallState> call, std::shared_ptr<Peer> peer,
                                    std::optional<json::Value> token, size_t max) {
  ToolContext ctx{client, max, call, nullptr};
  if (token) {
    ctx.progress = [peer, token, call](double progress, std::string message) {
      if (call->cancelled) return;
      json::Object p;
      p.Set("progressToken", *token).Set("progress", progress).Set("message", message);
      peer->Send(NotificationMessage("notifications/progress", std::move(p)));
    };
  }
  co_return co_await tool->run(ctx, args.as_object());
}

}  // namespace

const std::vector<std::string_view>& SupportedProtocolVersions() {
  static const std::vector<std::string_view> versions = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                         "2024-11-05"};
  return versions;
}

bool McpSession::Handle(std::string_view text, std::shared_ptr<Peer> peer) {
  Message m = ReadMessage(text);
  switch (m.kind) {
    case Message::Kind::kInvalid:
      peer->Send(ErrorMessage(m.id, m.error_code, m.error_message));
      peer->Done();
      return true;
    case Message::Kind::kResponse:
      peer->Done();
      return false;
    case Message::Kind::kNotification:
      HandleNotification(m);
      peer->Done();
      return false;
    case Message::Kind::kRequest:
      HandleRequest(std::move(m), std::move(peer));
      return true;
  }
  return false;
}

void McpSession::HandleNotification(const Message& m) {
  if (m.method == "notifications/initialized") {
    initialized_ = initialize_answered_;
  } else if (m.method == "notifications/cancelled") {
    if (const json::Value* id = m.params.Find("requestId")) Cancel(*id);
  }
  // Other notifications (progress of ours, roots changes) need nothing.
}

void McpSession::HandleRequest(Message m, std::shared_ptr<Peer> peer) {
  auto answer = [&](json::Value result) {
    peer->Send(ResultMessage(m.id, std::move(result)));
    peer->Done();
  };
  auto fail = [&](int code, std::string message) {
    peer->Send(ErrorMessage(m.id, code, message));
    peer->Done();
  };
  if (m.method == "ping") return answer(json::Object());
  if (m.method == "initialize") {
    if (initialize_answered_) return fail(kInvalidRequest, "the session is already initialized");
    const json::Value* version = m.params.Find("protocolVersion");
    if (!version || !version->is_string())
      return fail(kInvalidParams, "initialize needs params.protocolVersion (a string)");
    return answer(Initialize(m.params));
  }
  if (!initialize_answered_)
    return fail(kInvalidRequest, "the session is not initialized: send initialize first");
  if (m.method == "tools/list") {
    json::Array tools;
    for (const Tool& t : Tools()) tools.push_back(ToolListing(t));
    return answer(json::Object().Set("tools", std::move(tools)));
  }
  if (m.method == "tools/call") return CallTool(std::move(m), std::move(peer));
  fail(kMethodNotFound, "method not found: " + m.method);
}

json::Value McpSession::Initialize(const json::Object& params) {
  // Answer the client's revision when we speak it, else our newest; the
  // client decides whether it can go on with that.
  const std::string& asked = params.Find("protocolVersion")->as_string();
  protocol_version_ = std::string(SupportedProtocolVersions().front());
  for (std::string_view v : SupportedProtocolVersions()) {
    if (v == asked) protocol_version_ = asked;
  }
  initialize_answered_ = true;
  json::Object info;
  info.Set("name", "agentctl").Set("title", "agentd guest").Set("version", AGENTD_VERSION);
  json::Object r;
  r.Set("protocolVersion", protocol_version_)
      .Set("capabilities", Capabilities())
      .Set("serverInfo", std::move(info))
      .Set("instructions", kInstructions);
  return r;
}

void McpSession::CallTool(Message m, std::shared_ptr<Peer> peer) {
  auto fail = [&](int code, std::string message) {
    peer->Send(ErrorMessage(m.id, code, message));
    peer->Done();
  };
  const json::Value* name = m.params.Find("name");
  if (!name || !name->is_string()) return fail(kInvalidParams, "tools/call needs params.name");
  const Tool* tool = FindTool(name->as_string());
  if (!tool) return fail(kInvalidParams, "unknown tool: " + name->as_string());
  json::Value args = json::Object();
  if (const json::Value* a = m.params.Find("arguments"); a && !a->is_null()) args = *a;
  if (std::string why = SchemaViolation(InputSchema(*tool), args); !why.empty())
    return fail(kInvalidParams, "invalid arguments for " + std::string(tool->name) + ": " + why);
  std::string key = json::Canonical(m.id);
  if (calls_.count(key)) return fail(kInvalidRequest, "request id " + key + " is already in use");

  auto call = std::make_shared<CallState>();
  calls_[key] = call;
  std::optional<json::Value> token;
  if (const json::Value* meta = m.params.Find("_meta")) {
    const json::Value* t = meta->Find("progressToken");
    if (t && (t->is_string() || t->is_int())) token = *t;
  }
  auto self = shared_from_this();
  asio::co_spawn(
      client_.executor(),
      RunTool(client_, tool, std::move(args), call, peer, token, options_.max_result_bytes),
      [self, key, call, peer, id = m.id, max = options_.max_result_bytes](std::exception_ptr e,
                                                                          ToolOutput out) {
        self->calls_.erase(key);
        // A cancelled request gets no answer (the client forgot it).
        if (!call->cancelled) {
          peer->Send(e ? ErrorMessage(id, kInternalError, "the tool call failed")
                       : ResultMessage(id, ToolResult(std::move(out), max)));
        }
        peer->Done();
      });
}

void McpSession::Cancel(const json::Value& request_id) {
  auto it = calls_.find(json::Canonical(request_id));
  if (it == calls_.end()) return;  // already answered, or never ours
  it->second->cancelled = true;
  if (it->second->cancel) it->second->cancel();
}

}  // namespace agentd::cli::mcp
