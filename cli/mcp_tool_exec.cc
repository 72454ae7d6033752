// The exec and run_code tools. exec starts under a caller-minted id (or
// the model's own, for retries), streams the output into a head-and-tail
// keeper, reports progress when asked, and kills the exec when the call
// is cancelled.
#include <asio/experimental/awaitable_operators.hpp>
#include <chrono>
#include <variant>

#include "agentd/client/exec.h"
#include "agentd/protocol/run.h"
#include "mcp_cut.h"
#include "mcp_tools.h"

namespace agentd::cli::mcp {
namespace {

constexpr int64_t kDefaultExecTimeoutSec = 300;
// Progress notifications at most this often (a chatty command would
// otherwise send one per output chunk).
constexpr std::chrono::milliseconds kProgressEvery{200};

EnvOverlay EnvArg(const json::Object& args) {
  EnvOverlay env;
  if (const json::Value* e = args.Find("env"); e && e->is_object()) {
    for (const json::Member& m : e->as_object().members())
      env.emplace_back(m.key, m.value.is_string() ? m.value.as_string() : "");
  }
  return env;
}

std::string LastLine(const std::string& text) {
  size_t end = text.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  size_t start = text.rfind('\n', end);
  start = start == std::string::npos ? 0 : start + 1;
  return std::string(Utf8Head(text.substr(start, end + 1 - start), 200));
}

// "exit 0 in 12 ms", "killed: wall-clock limit 5s exceeded", ...
std::string ExecSummary(const ExecInfo& e, const std::string& stderr_text) {
  RunOutcome o;
  o.exit_code = e.exit_code;
  o.signal = e.signal;
  o.killed_by = e.killed_by;
  o.limit = e.limit;
  o.duration_ms = e.duration_ms;
  o.stderr_tail = stderr_text;
  std::string s = RunSummary(o);
  if (e.error) s += " (" + *e.error + ")";
  return s;
}

// Completes when `signal` is cancelled (a cancelled tools/call).
asio::awaitable<void> UntilCancelled(asio::steady_timer& signal) {
  asio::error_code ec;
  co_await signal.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

std::string Section(std::string_view name, const std::string& text) {
  if (text.empty()) return "";
  std::string s = "\n--- " + std::string(name) + " ---\n" + text;
  if (s.back() != '\n') s += "\n";
  return s;
}

}  // namespace

asio::awaitable<ToolOutput> ExecTool(ToolContext& ctx, const json::Object& args) {
  ExecStartRequest req;
  req.command = StringArg(args, "command");
  req.cwd = StringArg(args, "cwd");
  req.env = EnvArg(args);
  req.timeout_sec = IntArg(args, "timeout").value_or(kDefaultExecTimeoutSec);
  req.stdin_data = StringArg(args, "stdin");
  std::string id = StringArg(args, "id").value_or(client::MintExecId("mcp"));
  if (Status valid = ValidateExecId(id); !valid.ok()) co_return ErrorOutput(valid);

  client::AsyncClient& c = ctx.client;
  Result<ExecInfo> started = co_await c.StartExec(id, req);
  if (!started.ok()) co_return ErrorOutput(started.status());
  // From here a cancelled call kills the process group at once: the model
  // gave up on it, nobody reads its output.
  ctx.call->cancel = [&c, id] {
    KillRequest kill;
    kill.signal = "KILL";
    c.AsyncKillExec(id, kill, [](Result<ExecInfo>) {});
  };
  if (ctx.call->cancelled) ctx.call->cancel();

  size_t budget = ctx.max_result_bytes / 2;
  HeadTail out(budget), err(budget);
  uint64_t reported = 0;
  auto last_report = std::chrono::steady_clock::now() - kProgressEvery;
  std::string last_chunk;
  auto report = [&](std::string_view bytes) {
    last_chunk.assign(Utf8Tail(bytes, 1024));
    if (!ctx.progress) return;
    uint64_t total = out.total() + err.total();
    auto now = std::chrono::steady_clock::now();
    if (total <= reported || now - last_report < kProgressEvery) return;
    reported = total;
    last_report = now;
    std::string line = LastLine(last_chunk);
    ctx.progress(static_cast<double>(total),
                 std::to_string(total) + " bytes of output" + (line.empty() ? "" : ": " + line));
  };
  client::StreamCallbacks cb;
  cb.on_stdout = [&](uint64_t, std::string_view b) {
    out.Add(b);
    report(b);
  };
  cb.on_stderr = [&](uint64_t, std::string_view b) {
    err.Add(b);
    report(b);
  };
  Result<ExecInfo> final = co_await c.Stream(id, {}, cb);
  ctx.call->cancel = nullptr;
  if (!final.ok()) co_return ErrorOutput(final.status());
  if (Result<ExecInfo> acked = co_await c.AckExec(id); acked.ok()) final->acked = true;

  std::string out_text = out.Text(), err_text = err.Text();
  ToolOutput result;
  result.structured = EncodeExecInfoObject(*final);
  result.structured.Set("summary", ExecSummary(*final, err_text))
      .Set("stdout", out_text)
      .Set("stderr", err_text);
  if (out.cut() || err.cut()) {
    json::Object cut;
    cut.Set("stdout_bytes", out.total()).Set("stderr_bytes", err.total());
    cut.Set("kept_per_stream", budget);
    result.structured.Set("output_cut", std::move(cut));
  }
  result.text = "exec " + id + ": " + ExecSummary(*final, err_text) + Section("stdout", out_text) +
                Section("stderr", err_text);
  co_return result;
}

asio::awaitable<ToolOutput> RunCodeTool(ToolContext& ctx, const json::Object& args) {
  RunRequest req;
  req.code = StringArg(args, "code").value_or("");
  std::optional<Runtime> runtime = ParseRuntime(StringArg(args, "runtime").value_or("shell"));
  if (!runtime) co_return ErrorOutput(Status::InvalidRequest("runtime is shell, python or ts"));
  req.runtime = *runtime;
  req.cwd = StringArg(args, "cwd");
  req.timeout_sec = IntArg(args, "timeout");
  req.stdin_data = StringArg(args, "stdin");
  // A cancelled call abandons the request: the daemon kills a run whose
  // client goes away (docs/PROTOCOL.md, "Run code").
  asio::steady_timer cancelled(ctx.client.executor(), asio::steady_timer::time_point::max());
  ctx.call->cancel = [&cancelled] { cancelled.cancel(); };
  using namespace asio::experimental::awaitable_operators;
  std::variant<Result<RunResponse>, std::monostate> done =
      co_await (ctx.client.RunCode(req) || UntilCancelled(cancelled));
  ctx.call->cancel = nullptr;
  if (done.index() == 1) co_return ErrorOutput(Status::Internal("the call was cancelled"));
  Result<RunResponse>& r = std::get<0>(done);
  if (!r.ok()) co_return ErrorOutput(r.status());
  ToolOutput result;
  // The daemon's answer as it came, whatever fields it carries.
  result.structured = std::move(EncodeRunResponse(*r).as_object());
  std::string text =
      r->summary + Section("stdout", r->stdout_text) + Section("stderr", r->stderr_text);
  for (const char* extra : {"exception", "result"}) {
    const json::Value* v = result.structured.Find(extra);
    if (v && !v->is_null())
      text += Section(extra, v->is_string() ? v->as_string() : json::Serialize(*v));
  }
  if (!r->changed_files.empty()) {
    text += "\n--- changed files ---\n";
    for (const ChangedFile& f : r->changed_files) text += f.change + " " + f.path + "\n";
    if (r->changed_files_truncated) text += "(more not listed)\n";
  }
  result.text = std::move(text);
  co_return result;
}

}  // namespace agentd::cli::mcp
