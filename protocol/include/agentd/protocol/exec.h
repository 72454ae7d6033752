// Exec vocabulary (docs/PROTOCOL.md, "Exec"): the start request, the exec
// object, poll answers, kill and stdin bodies, and the SSE payloads. Shared
// by the daemon (which decodes requests and encodes answers) and the client
// library (which does the reverse). No I/O; plain data, not thread-safe to
// mutate concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agentd/protocol/egress.h"
#include "agentd/protocol/json.h"
#include "agentd/protocol/limits.h"
#include "agentd/protocol/object_reader.h"
#include "agentd/protocol/runtime.h"
#include "agentd/protocol/status.h"

namespace agentd {

// Exec ids are minted by callers: 1 to 128 characters of [A-Za-z0-9._-].
inline constexpr size_t kMaxExecIdBytes = 128;
bool IsValidExecId(std::string_view id);
// invalid_request naming the field "id" when the id is malformed.
Status ValidateExecId(std::string_view id);

// Bounds of the start request's numbers (docs/PROTOCOL.md, "Start").
inline constexpr int64_t kMaxTimeoutSec = 30 * 86400;
inline constexpr int64_t kMaxKillGraceSec = 3600;
inline constexpr int64_t kDefaultKillGraceSec = 5;
inline constexpr char kDefaultShell[] = "/bin/sh";
inline constexpr int64_t kMaxPtyDimension = 10000;
inline constexpr char kDefaultTerm[] = "xterm-256color";

// Exec profiles (docs/PROTOCOL.md, "Profiles"; docs/SECURITY.md).
inline constexpr char kProfileUnrestricted[] = "unrestricted";
inline constexpr char kProfileRestricted[] = "restricted";
// invalid_request naming `field` unless `name` is one of the two.
Status ValidateProfile(std::string_view name, std::string_view field = "profile");

// "network": "none" (docs/PROTOCOL.md, "No network"): the exec gets a
// network namespace of its own with only loopback, up.
inline constexpr char kNetworkNone[] = "none";
// invalid_request naming the field unless `value` is "none".
Status ValidateNetwork(std::string_view value);

// What a restricted exec actually ran with: the "restriction" member of the
// exec object and of the /v1/run answer. Every item is in force when the
// member is present (a step that cannot be applied fails the spawn); the
// one item that may be absent, the filter, is named by `seccomp`.
struct ExecRestriction {
  std::string user;  // the name switched to ("" when given by number)
  int64_t uid = 0;
  int64_t gid = 0;
  bool no_new_privs = true;
  // Always "none" on the wire: bounding, effective, permitted, inheritable
  // and ambient sets empty.
  std::string capabilities = "none";
  int64_t seccomp_refused_syscalls = 0;  // how many calls the filter answers EPERM
  // Whether the filter was loaded: false only under the operator's
  // --restricted-without-seccomp on a kernel that cannot load one, and then
  // `seccomp_why` says why (seccomp_refused_syscalls is 0). Records from
  // before the flag always had it.
  bool seccomp = true;
  std::string seccomp_why;
  // Bound read-only in the exec's own mount namespace (empty: none could be).
  std::vector<std::string> readonly_paths;
};
json::Object EncodeExecRestriction(const ExecRestriction& r);
std::optional<ExecRestriction> DecodeExecRestriction(const json::Value* v);

// "pty": {"rows": R, "cols": C, "term": "..."}: run on a new pseudo-terminal.
struct PtySpec {
  int64_t rows = 24;
  int64_t cols = 80;
  std::optional<std::string> term;  // TERM of the child; default kDefaultTerm
};

struct ExecStartRequest {
  std::vector<std::string> argv;       // argv mode (non-empty) ...
  std::optional<std::string> command;  // ... or shell mode ...
  std::optional<Runtime> runtime;      // ... or code mode (runtime and code), exactly one
  std::optional<std::string> code;
  std::optional<std::string> shell;  // shell mode only; default kDefaultShell
  EnvOverlay env;                    // a nullopt value unsets the variable
  std::optional<std::string> cwd;
  std::optional<std::string> user;
  std::optional<std::string> group;
  std::optional<std::string> profile;  // "restricted" | "unrestricted"; unset: the daemon's default
  std::optional<std::string> network;  // "none"; unset: the guest's network
  // docs/PROTOCOL.md, "Egress"; unset: the daemon's --default-egress.
  std::optional<EgressPolicy> egress;
  // Whole stdin, as sent: `stdin` (text) or `stdin_b64` (decoded here into
  // `stdin_data`, with `stdin_was_b64` remembering the spelling).
  std::optional<std::string> stdin_data;
  bool stdin_was_b64 = false;
  bool stdin_stream = false;
  std::optional<int64_t> timeout_sec;
  std::optional<int64_t> kill_grace_sec;
  std::optional<PtySpec> pty;
  ExecLimits limits;  // docs/PROTOCOL.md, "Limits"

  // The argv the process gets: argv, {shell, "-c", command}, or the
  // runtime's argv for the code.
  std::vector<std::string> EffectiveArgv() const;
};

Result<ExecStartRequest> DecodeExecStartRequest(const json::Value& doc);
json::Value EncodeExecStartRequest(const ExecStartRequest& req);
// Two requests are "identical" exactly when their fingerprints are equal:
// the SHA-256 (hex) of the canonical JSON of the decoded request, so key
// order, whitespace and members given as null do not matter, and a record
// holds 64 characters however large its request (whole stdin) was.
std::string ExecFingerprint(const ExecStartRequest& req);

// The exec object.
struct ExecInfo {
  std::string id;
  bool running = true;  // "state": "running" | "exited"
  int64_t pid = 0;
  std::optional<int64_t> exit_code;
  std::optional<std::string> signal;  // "TERM", without the SIG prefix
  bool timed_out = false;
  std::optional<std::string> killed_by;
  std::string started_at;  // RFC 3339
  std::optional<std::string> ended_at;
  int64_t duration_ms = 0;
  uint64_t stdout_bytes = 0;
  uint64_t stderr_bytes = 0;
  uint64_t stdout_retained_from = 0;
  uint64_t stderr_retained_from = 0;
  bool acked = false;
  std::optional<std::string> error;  // spawn failure or lost status, one sentence
  // The limit that ended the process ("killed_by" names it too).
  std::optional<LimitHit> limit;
  // The limits in force ("limits": {"timeout_sec": 30, "memory_mb": 256}).
  std::optional<int64_t> limit_timeout_sec;
  ExecLimits limits;
  std::string profile = kProfileUnrestricted;  // the profile it ran under
  std::optional<ExecRestriction> restriction;  // restricted: what was applied
  std::optional<std::string> network;          // "none" when it ran without network
  std::optional<EgressPolicy> egress;          // the policy in force, when one is
};

json::Value EncodeExecInfo(const ExecInfo& info);
json::Object EncodeExecInfoObject(const ExecInfo& info);
Result<ExecInfo> DecodeExecInfo(const json::Value& doc);

// One stream's slice in a poll answer. `gap_from` is set when the caller's
// cursor was before the first retained byte: bytes [gap_from, from) are
// lost and `from` is the first byte returned.
struct OutputSlice {
  uint64_t from = 0;
  uint64_t next = 0;
  std::string data;
  std::optional<uint64_t> gap_from;
};

// The "match" member of a poll with until=match (docs/PROTOCOL.md,
// "Wait for output").
struct OutputMatch {
  std::string stream;  // "stdout" or "stderr"
  bool matched = false;
  uint64_t offset = 0;  // matched: the stream offset of the match's first byte
  uint64_t end = 0;     // matched: one past its last byte
  std::string text;     // matched: the bytes ("text" and "text_b64" on the wire)
  // Not matched: "timeout", "exited", "window_limit" or "scan_limit".
  std::string reason;
  uint64_t next = 0;                 // where a caller resumes the wait without losing a match
  std::optional<uint64_t> gap_from;  // the cursor, when bytes from it were lost
  uint64_t gap_to = 0;
};

struct ExecPollResponse {
  ExecInfo exec;
  std::optional<OutputSlice> stdout_slice;  // present when stdout_from was given
  std::optional<OutputSlice> stderr_slice;
  std::optional<OutputMatch> match;  // present with until=match
};
json::Value EncodeExecPollResponse(const ExecPollResponse& r);
Result<ExecPollResponse> DecodeExecPollResponse(const json::Value& doc);

json::Value EncodeExecList(const std::vector<ExecInfo>& execs);
Result<std::vector<ExecInfo>> DecodeExecList(const json::Value& doc);

struct KillRequest {
  std::optional<std::string> signal;  // default "TERM"
  std::optional<int64_t> grace_sec;   // default kDefaultKillGraceSec
};
// An empty body (null document) is a kill with the defaults.
Result<KillRequest> DecodeKillRequest(const json::Value& doc);
json::Value EncodeKillRequest(const KillRequest& req);

// POST /v1/execs/{id}/resize: {"rows": R, "cols": C}.
struct ResizeRequest {
  int64_t rows = 0;
  int64_t cols = 0;
};
Result<ResizeRequest> DecodeResizeRequest(const json::Value& doc);
json::Value EncodeResizeRequest(const ResizeRequest& req);

struct StdinResponse {
  uint64_t next = 0;
};
json::Value EncodeStdinResponse(const StdinResponse& r);
Result<StdinResponse> DecodeStdinResponse(const json::Value& doc);

// SSE: the `id:` of every event is "<stdout_next>:<stderr_next>".
std::string FormatExecEventId(uint64_t stdout_next, uint64_t stderr_next);
std::optional<std::pair<uint64_t, uint64_t>> ParseExecEventId(std::string_view id);
// The data line of a stdout/stderr event: {"offset":N,"data_b64":"..."},
// written without a JSON tree (this is the streaming hot path).
void AppendOutputEventData(std::string& out, uint64_t offset, std::string_view bytes);
std::string GapEventData(std::string_view stream, uint64_t from, uint64_t to);

}  // namespace agentd
