// `agentctl wait port N`, `wait path P [--gone]`, `wait output ID PATTERN`:
// the daemon's condition waits (docs/PROTOCOL.md, "Wait for output",
// "Wait for a port", "Wait for a path"). Exit 0 when the condition held,
// 1 when --for passed first (or, for output, the exec ended without a
// match), like grep's "no match". `wait ID` (an exec's exit) is CmdWait.
#include <charconv>

#include "agentd/protocol/exec.h"
#include "commands.h"
#include "exit_codes.h"

namespace agentd::cli {
namespace {

std::optional<uint64_t> ParseNumber(const std::string& text) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return n;
}

int WaitPort(Context& ctx, std::chrono::milliseconds limit) {
  const std::vector<std::string>& pos = ctx.args().positional;
  std::optional<uint64_t> port = pos.size() == 2 ? ParseNumber(pos[1]) : std::nullopt;
  if (!port || *port == 0 || *port > 65535) {
    return ctx.out().UsageError("wait port takes one port number from 1 to 65535");
  }
  Result<bool> r = ctx.client().WaitForPort(static_cast<uint16_t>(*port), limit);
  if (!r.ok()) return ctx.out().Fail(r.status());
  json::Object out;
  out.Set("port", static_cast<int64_t>(*port)).Set("listening", *r);
  ctx.out().Succeed(out,
                    "port " + std::to_string(*port) + (*r ? " is listening" : " is not listening"));
  return *r ? kExitOk : kExitFailure;
}

int WaitPath(Context& ctx, std::chrono::milliseconds limit) {
  const std::vector<std::string>& pos = ctx.args().positional;
  if (pos.size() != 2) return ctx.out().UsageError("wait path takes one guest path");
  bool gone = ctx.args().Has("gone");
  Result<bool> r = ctx.client().WaitForPath(pos[1], gone, limit);
  if (!r.ok()) return ctx.out().Fail(r.status());
  json::Object out;
  out.Set("path", pos[1]).Set("until", gone ? "gone" : "exists").Set("met", *r);
  std::string human = pos[1] + (*r ? (gone ? " is gone" : " exists")
                                   : (gone ? " still exists" : " does not exist"));
  ctx.out().Succeed(out, human);
  return *r ? kExitOk : kExitFailure;
}

int WaitOutput(Context& ctx, std::chrono::milliseconds limit) {
  const std::vector<std::string>& pos = ctx.args().positional;
  if (pos.size() != 3) return ctx.out().UsageError("wait output takes an exec ID and a PATTERN");
  client::WaitForOutputOptions o;
  o.stream = ctx.args().Get("stream").value_or("stdout");
  if (o.stream != "stdout" && o.stream != "stderr") {
    return ctx.out().UsageError("--stream is stdout or stderr");
  }
  if (std::optional<std::string> c = ctx.args().Get("cursor")) {
    std::optional<uint64_t> n = ParseNumber(*c);
    if (!n) return ctx.out().UsageError("--cursor takes a byte offset");
    o.cursor = *n;
  }
  o.timeout = limit;
  Result<ExecPollResponse> r = ctx.client().WaitForOutput(pos[1], pos[2], o);
  if (!r.ok()) return ctx.out().Fail(r.status());
  // The wire's match member, as the daemon answered it.
  json::Value doc = EncodeExecPollResponse(*r);
  json::Value match = doc.Find("match") ? *doc.Find("match") : json::Value();
  const OutputMatch& m = *r->match;
  ctx.out().Succeed(match, m.matched ? m.text : "no match (" + m.reason + ")");
  return m.matched ? kExitOk : kExitFailure;
}

}  // namespace

bool IsConditionWait(const Context& ctx) {
  const std::vector<std::string>& pos = ctx.args().positional;
  return pos.size() >= 2 && (pos[0] == "port" || pos[0] == "path" || pos[0] == "output");
}

int CmdWaitCondition(Context& ctx, std::chrono::milliseconds limit) {
  const std::string& what = ctx.args().positional[0];
  if (what == "port") return WaitPort(ctx, limit);
  if (what == "path") return WaitPath(ctx, limit);
  return WaitOutput(ctx, limit);
}

}  // namespace agentd::cli
