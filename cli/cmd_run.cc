// agentctl run: one code action through POST /v1/run (docs/PROTOCOL.md,
// "Run code"). Human mode prints the code's stdout and stderr as they came
// back, then the summary and the changed files on stderr, and exits with
// the remote exit code (124 for a timeout, 128+n for a signal).
#include <unistd.h>

#include <charconv>

#include "commands.h"
#include "exec_format.h"
#include "exit_codes.h"

namespace agentd::cli {
namespace {

bool Int(const ParsedArgs& args, std::string_view flag, std::optional<int64_t>* out) {
  std::optional<std::string> text = args.Get(flag);
  if (!text) return true;
  int64_t n = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
  if (ec != std::errc() || end != text->data() + text->size()) return false;
  *out = n;
  return true;
}

}  // namespace

int CmdRun(Context& ctx) {
  const ParsedArgs& args = ctx.args();
  RunRequest req;
  std::optional<Runtime> runtime = ParseRuntime(args.Get("runtime").value_or("shell"));
  if (!runtime) return ctx.out().UsageError("--runtime is shell, python or ts");
  req.runtime = *runtime;
  req.code = args.positional.at(0);
  req.cwd = args.Get("cwd");
  req.profile = args.Get("profile");
  if (req.profile && *req.profile != kProfileRestricted && *req.profile != kProfileUnrestricted) {
    return ctx.out().UsageError("--profile is restricted or unrestricted");
  }
  bool ok = Int(args, "timeout", &req.timeout_sec) &&
            Int(args, "memory-mb", &req.limits.memory_mb) && Int(args, "pids", &req.limits.pids) &&
            Int(args, "cpu-sec", &req.limits.cpu_sec) &&
            Int(args, "file-size-mb", &req.limits.file_size_mb);
  if (!ok) {
    return ctx.out().UsageError(
        "--timeout, --memory-mb, --pids, --cpu-sec and --file-size-mb take whole numbers");
  }
  if (args.Has("no-scan")) req.scan_changes = false;
  Result<RunResponse> r = ctx.client().RunCode(req);
  if (!r.ok()) return ctx.out().Fail(r.status());
  if (ctx.out().json()) {
    ctx.out().Succeed(EncodeRunResponse(*r), "");
  } else {
    WriteAllTo(STDOUT_FILENO, r->stdout_text);
    std::string err = r->stderr_text;
    if (!err.empty() && err.back() != '\n') err += "\n";
    err += "agentctl: " + r->summary + "\n";
    for (const ChangedFile& f : r->changed_files) err += "  " + f.change + " " + f.path + "\n";
    if (r->changed_files_truncated) err += "  (changed files incomplete)\n";
    WriteAllTo(STDERR_FILENO, err);
  }
  if (!r->exit_code) return kExitFailure;
  return static_cast<int>(*r->exit_code & 0xff);
}

}  // namespace agentd::cli
