// agentctl context: stateful contexts (docs/PROTOCOL.md, "Contexts").
//   context create ID [--runtime python|ts --cwd DIR --memory-mb N ...]
//   context run ID CODE [--timeout S --run-id ID]   (answered like `run`)
//   context get ID | list | reset ID | delete ID
#include <charconv>

#include "commands.h"
#include "exec_format.h"

namespace agentd::cli {
namespace {

bool ContextInt(const ParsedArgs& args, std::string_view flag, std::optional<int64_t>* out) {
  std::optional<std::string> text = args.Get(flag);
  if (!text) return true;
  int64_t n = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
  if (ec != std::errc() || end != text->data() + text->size()) return false;
  *out = n;
  return true;
}

std::string ContextLine(const ContextInfo& c) {
  std::string line = c.id + "  " + c.state + "  " + c.runtime + "  pid " + std::to_string(c.pid) +
                     "  runs " + std::to_string(c.runs) + "  " + c.cwd;
  if (c.ended_reason) line += "  ended: " + *c.ended_reason;
  if (c.limit) line += " (" + DescribeLimit(*c.limit) + ")";
  return line + "\n";
}

int ContextAnswer(Context& ctx, const Result<ContextInfo>& c) {
  if (!c.ok()) return ctx.out().Fail(c.status());
  return ctx.out().Succeed(EncodeContextInfo(*c), ContextLine(*c));
}

int ContextCreate(Context& ctx, const std::string& id) {
  const ParsedArgs& args = ctx.args();
  ContextCreateRequest req;
  req.id = id;
  std::optional<Runtime> runtime = ParseRuntime(args.Get("runtime").value_or("python"));
  if (!runtime) return ctx.out().UsageError("--runtime is python or ts");
  req.spec.runtime = *runtime;
  req.spec.cwd = args.Get("cwd");
  req.spec.profile = args.Get("profile");
  req.spec.network = args.Get("network");
  Result<std::optional<EgressPolicy>> egress = EgressFromArgs(args);
  if (!egress.ok()) return ctx.out().UsageError(egress.status().message());
  req.spec.egress = std::move(*egress);
  bool ok = ContextInt(args, "memory-mb", &req.spec.limits.memory_mb) &&
            ContextInt(args, "pids", &req.spec.limits.pids) &&
            ContextInt(args, "cpu-sec", &req.spec.limits.cpu_sec);
  if (!ok) return ctx.out().UsageError("--memory-mb, --pids and --cpu-sec take whole numbers");
  return ContextAnswer(ctx, ctx.client().CreateContext(std::move(req)));
}

int ContextRun(Context& ctx, const std::string& id, const std::string& code) {
  ContextRunRequest req;
  req.code = code;
  req.run_id = ctx.args().Get("run-id");
  req.artifacts_dir = ctx.args().Get("artifacts-dir");
  Result<std::optional<EgressPolicy>> egress = EgressFromArgs(ctx.args());
  if (!egress.ok()) return ctx.out().UsageError(egress.status().message());
  req.egress = std::move(*egress);
  if (!ContextInt(ctx.args(), "timeout", &req.timeout_sec)) {
    return ctx.out().UsageError("--timeout takes whole seconds");
  }
  Result<RunResponse> r = ctx.client().RunInContext(id, std::move(req));
  if (!r.ok()) return ctx.out().Fail(r.status());
  return AnswerRun(ctx, *r);
}

int ContextList(Context& ctx) {
  Result<std::vector<ContextInfo>> list = ctx.client().ListContexts();
  if (!list.ok()) return ctx.out().Fail(list.status());
  json::Array items;
  std::string human;
  for (const ContextInfo& c : *list) {
    items.emplace_back(EncodeContextInfo(c));
    human += ContextLine(c);
  }
  return ctx.out().Succeed(json::Value(std::move(items)), human);
}

}  // namespace

int CmdContext(Context& ctx) {
  const std::vector<std::string>& p = ctx.args().positional;
  const std::string& action = p.at(0);
  if (action == "list" && p.size() == 1) return ContextList(ctx);
  if (p.size() < 2) return ctx.out().UsageError("context " + action + " needs a context id");
  const std::string& id = p[1];
  if (action == "run") {
    if (p.size() != 3) return ctx.out().UsageError("context run ID CODE");
    return ContextRun(ctx, id, p[2]);
  }
  if (p.size() != 2) return ctx.out().UsageError("context " + action + " takes one id");
  if (action == "create") return ContextCreate(ctx, id);
  if (action == "get") return ContextAnswer(ctx, ctx.client().GetContext(id));
  if (action == "reset") return ContextAnswer(ctx, ctx.client().ResetContext(id));
  if (action == "delete") return ContextAnswer(ctx, ctx.client().DeleteContext(id));
  return ctx.out().UsageError("context takes create, run, get, list, reset or delete");
}

}  // namespace agentd::cli
