// agentctl run: one code action through POST /v1/run (docs/PROTOCOL.md,
// "Run code"). Human mode prints the code's stdout and stderr as they came
// back, then the summary, the exception (a trimmed traceback), the
// changed files and the artifacts on stderr, and exits with
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

// The exception as a trimmed traceback: only the caller's frames, with
// their source lines, then what was left out and a KeyError's keys.
std::string ExceptionBlock(const RunException& e) {
  std::string out = "agentctl: exception " + e.type + (e.message.empty() ? "" : ": " + e.message);
  out += "\n";
  for (const ExceptionFrame& f : e.frames) {
    out += "  " + f.file + " line " + std::to_string(f.line) + ", in " + f.function + "\n";
    if (f.source_line && !f.source_line->empty()) out += "    " + *f.source_line + "\n";
  }
  if (e.frames.empty() && e.line) {
    out += "  " + e.file.value_or("<string>") + " line " + std::to_string(*e.line);
    if (e.column) out += ", column " + std::to_string(*e.column);
    out += "\n";
    if (e.source_line && !e.source_line->empty()) out += "    " + *e.source_line + "\n";
  }
  if (e.omitted_frames > 0) {
    out += "  (" + std::to_string(e.omitted_frames) + " interpreter or library frames omitted)\n";
  }
  if (e.keys_present) {
    std::string keys;
    for (const std::string& k : *e.keys_present) keys += (keys.empty() ? "" : ", ") + k;
    out += "  keys present: " + (keys.empty() ? "(none)" : keys);
    if (e.keys_total && *e.keys_total > static_cast<int64_t>(e.keys_present->size())) {
      out += " (" + std::to_string(*e.keys_total) + " in all)";
    }
    out += "\n";
  }
  return out;
}

// One line per artifact, as `ls -l` would put it: size, type, hash, path.
std::string ArtifactLines(const ArtifactList& list) {
  std::string out;
  for (const Artifact& a : list.items) {
    out += "  artifact " + a.path + " (" + a.media_type + ", " + std::to_string(a.bytes) +
           " bytes" + (a.sha256 ? ", sha256 " + a.sha256->substr(0, 16) : "") + ")\n";
  }
  if (list.items.empty()) out += "  (no artifacts)\n";
  if (list.truncated && list.bound) {
    out += "  (artifacts incomplete: " + list.bound->name + " " +
           std::to_string(list.bound->value) + " " + list.bound->unit + ")\n";
  }
  return out;
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
  req.network = args.Get("network");
  if (req.network && *req.network != kNetworkNone) {
    return ctx.out().UsageError("--network takes only none");
  }
  Result<std::optional<EgressPolicy>> egress = EgressFromArgs(args);
  if (!egress.ok()) return ctx.out().UsageError(egress.status().message());
  req.egress = std::move(*egress);
  bool ok = Int(args, "timeout", &req.timeout_sec) &&
            Int(args, "memory-mb", &req.limits.memory_mb) && Int(args, "pids", &req.limits.pids) &&
            Int(args, "cpu-sec", &req.limits.cpu_sec) &&
            Int(args, "file-size-mb", &req.limits.file_size_mb) &&
            Int(args, "disk-bytes", &req.limits.disk_bytes);
  if (!ok) {
    return ctx.out().UsageError(
        "--timeout, --memory-mb, --pids, --cpu-sec, --file-size-mb and --disk-bytes take whole "
        "numbers");
  }
  req.limits.disk_path = args.Get("disk-path");
  if (args.Has("no-scan")) req.scan_changes = false;
  if (std::optional<std::string> marker = args.Get("result-marker")) req.result_marker = *marker;
  req.artifacts_dir = args.Get("artifacts-dir");
  Result<RunResponse> r = ctx.client().RunCode(req);
  if (!r.ok()) return ctx.out().Fail(r.status());
  return AnswerRun(ctx, *r);
}

int AnswerRun(Context& ctx, const RunResponse& answer) {
  const RunResponse* r = &answer;
  if (ctx.out().json()) {
    ctx.out().Succeed(EncodeRunResponse(*r), "");
  } else {
    WriteAllTo(STDOUT_FILENO, r->stdout_text);
    std::string err = r->stderr_text;
    if (!err.empty() && err.back() != '\n') err += "\n";
    err += "agentctl: " + r->summary + "\n";
    if (r->exception) err += ExceptionBlock(*r->exception);
    if (r->result) err += "agentctl: result " + json::Serialize(*r->result) + "\n";
    if (r->result_error) err += "agentctl: result_error " + *r->result_error + "\n";
    for (const ChangedFile& f : r->changed_files) err += "  " + f.change + " " + f.path + "\n";
    if (r->changed_files_truncated) err += "  (changed files incomplete)\n";
    if (r->artifacts) err += ArtifactLines(*r->artifacts);
    WriteAllTo(STDERR_FILENO, err);
  }
  if (!r->exit_code) return kExitFailure;
  return static_cast<int>(*r->exit_code & 0xff);
}

}  // namespace agentd::cli
