// Run code (docs/PROTOCOL.md, "Run code"): the POST /v1/run request and
// answer, and the one-line summary a model acts on. Shared by the daemon
// and the client library. No I/O; plain data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/protocol/artifacts.h"
#include "agentd/protocol/exec.h"
#include "agentd/protocol/json.h"
#include "agentd/protocol/limits.h"
#include "agentd/protocol/run_exception.h"
#include "agentd/protocol/runtime.h"
#include "agentd/protocol/status.h"

namespace agentd {

// The timeout of a run is clamped to this many seconds.
inline constexpr int64_t kMaxRunTimeoutSec = 300;
// stdout and stderr of a run answer carry at most this many output bytes
// each: the first kRunHeadBytes and the last kRunOutputBytes -
// kRunHeadBytes of a longer stream, joined by one marker line.
inline constexpr size_t kRunOutputBytes = 64 * 1024;
inline constexpr size_t kRunHeadBytes = 16 * 1024;
// The default result_marker (docs/PROTOCOL.md, "Run code").
inline constexpr char kDefaultResultMarker[] = "__AGENTD_RESULT__";
inline constexpr size_t kMaxResultMarkerBytes = 64;
// Longest summary error line, in bytes.
inline constexpr size_t kMaxSummaryLineBytes = 240;
// Destinations a run answer lists in "egress" (GET /v1/execs/{id}/egress
// has them all while the record lives; a run's is discarded).
inline constexpr size_t kMaxRunEgressDestinations = 16;

struct RunRequest {
  Runtime runtime = Runtime::kShell;
  std::string code;
  std::optional<int64_t> timeout_sec;  // as asked; clamped by the daemon
  std::optional<std::string> cwd;
  EnvOverlay env;
  std::optional<std::string> user;
  std::optional<std::string> group;
  std::optional<std::string> stdin_data;  // `stdin`, text
  std::optional<std::string> profile;     // as in the start request
  std::optional<std::string> network;     // as in the start request
  std::optional<EgressPolicy> egress;     // as in the start request
  bool scan_changes = true;               // false: no changed_files scan
  ExecLimits limits;
  // A stdout line starting with it carries the result; "" turns it off.
  std::string result_marker = kDefaultResultMarker;
  // Files the run creates or modifies below it (relative to cwd) are
  // answered as `artifacts`.
  std::optional<std::string> artifacts_dir;
};

Result<RunRequest> DecodeRunRequest(const json::Value& doc);
json::Value EncodeRunRequest(const RunRequest& req);
// The exec request a run becomes (argv of the runtime, limits, ...);
// `cwd` and `timeout_sec` are the effective ones.
ExecStartRequest RunToExecRequest(const RunRequest& req, std::string cwd, int64_t timeout_sec);

struct ChangedFile {
  std::string path;    // relative to the run's cwd
  std::string change;  // "added" | "modified" | "removed"
  std::string type;    // "file" | "dir" | "symlink" | "other"
};

struct RunResponse {
  std::string summary;
  std::optional<int64_t> exit_code;
  bool success = false;
  std::string stdout_text;  // at most kRunOutputBytes of output (+ marker)
  std::string stderr_text;
  bool truncated = false;
  int64_t duration_ms = 0;
  std::vector<ChangedFile> changed_files;
  bool changed_files_truncated = false;
  // Why the list is incomplete: {"name": "scan_entries", "value": N,
  // "unit": "entries"}, "scan_time" (ms) or "answer_entries".
  std::optional<LimitHit> changed_files_bound;
  std::optional<std::string> signal;
  bool timed_out = false;
  std::optional<std::string> killed_by;
  std::optional<LimitHit> limit;
  uint64_t stdout_bytes = 0;  // whole stream lengths
  uint64_t stderr_bytes = 0;
  std::string runtime;
  std::string cwd;
  int64_t timeout_sec = 0;                     // the effective (clamped) wall-clock limit
  std::optional<std::string> error;            // spawn failure
  std::string profile = kProfileUnrestricted;  // as in the exec object
  std::optional<ExecRestriction> restriction;
  std::optional<std::string> network;  // as in the exec object
  // The run's egress accounting when it ran under a policy, its
  // destinations bounded (refused first, then by count; kMaxRunEgressDestinations).
  std::optional<EgressReport> egress;
  // What a python run raised (its driver's report); null when it raised
  // nothing, or for shell.
  std::optional<RunException> exception;
  // The last result line's JSON value (absent on the wire when there was
  // none), or why the last result line is not one.
  std::optional<json::Value> result;
  std::optional<std::string> result_error;
  // Present when the request named an artifacts_dir.
  std::optional<ArtifactList> artifacts;
};

json::Value EncodeRunResponse(const RunResponse& r);
Result<RunResponse> DecodeRunResponse(const json::Value& doc);

// What the summary is made of.
struct RunOutcome {
  std::optional<int64_t> exit_code;
  std::optional<std::string> signal;
  std::optional<std::string> killed_by;
  std::optional<LimitHit> limit;
  int64_t duration_ms = 0;
  size_t changed_files = 0;
  bool changed_files_truncated = false;
  std::string stderr_tail;  // the last bytes of stderr
  // The run's exception, when it raised one: named instead of the last
  // stderr line.
  std::optional<RunException> exception;
  // Refused attempts are named: "; network: 2 connections to
  // 169.254.169.254:80 refused by policy public".
  std::optional<EgressReport> egress;
};

// One line: "exit 0 in 120 ms; 2 files changed",
// "exit 1 in 30 ms: ModuleNotFoundError: No module named 'x'",
// "killed: wall-clock limit 30s exceeded", "killed: memory limit 256 MiB
// exceeded".
std::string RunSummary(const RunOutcome& o);
// The last non-blank line of `text`, control characters replaced by
// spaces, trimmed, cut at kMaxSummaryLineBytes on a UTF-8 boundary.
std::string LastErrorLine(std::string_view text);
// `bytes` cut to at most `max` bytes without splitting a UTF-8 sequence
// (from the front when `from_end`).
std::string_view Utf8Head(std::string_view bytes, size_t max);
std::string_view Utf8Tail(std::string_view bytes, size_t max);
// The marker line between the head and the tail of a cut stream.
std::string OmittedMarker(uint64_t omitted_bytes);

}  // namespace agentd
