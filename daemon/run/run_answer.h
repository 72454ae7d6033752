// The answer of one code run (docs/PROTOCOL.md, "Run code"), built from
// what the run left: its outcome, its output, its changed files and its
// exception report. Shared by /v1/run (run/code_run.h), whose output is a
// whole exec's, and a context run (run/code_context.h), whose output is
// the part of its interpreter's streams between two offsets. Reads the
// logs on the io thread, each within the answer's bounds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "agentd/protocol/egress.h"
#include "agentd/protocol/exec.h"
#include "agentd/protocol/run.h"
#include "run/tree_scan.h"
#include "spool/output_log.h"

namespace agentd {

// Bytes [from, to) of one stream: a run's own output.
struct StreamWindow {
  const OutputLog* log = nullptr;
  uint64_t from = 0;
  uint64_t to = 0;
  static StreamWindow Whole(const OutputLog& log) { return {&log, 0, log.next()}; }
};

struct AnswerParts {
  // The outcome, as the exec object says it (exit_code, signal, killed_by,
  // limit, duration_ms, profile, restriction, network, limit_timeout_sec).
  ExecInfo info;
  StreamWindow out;
  StreamWindow err;
  std::string cwd;
  Runtime runtime = Runtime::kShell;
  std::string result_marker;  // "" : no result lines
  TreeDiff diff;
  std::optional<RunException> exception;  // kept only when the run failed
  std::optional<EgressReport> egress;     // answered when the exec had accounting
  std::optional<ArtifactList> artifacts;  // answered when an artifacts_dir was asked for
};

RunResponse BuildRunAnswer(AnswerParts parts);

// The window as a run answer carries it: whole up to kRunOutputBytes, else
// its first and last bytes around a marker. Sets *cut when bytes are left out.
std::string RunAnswerText(const StreamWindow& w, bool* cut);

}  // namespace agentd
