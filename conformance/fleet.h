// Fleet: `agentd-conformance --targets FILE` checks many guests at once.
//
// FILE holds one guest a line, `URL TOKEN-FILE` (blank lines and `#`
// comments skipped). Each guest is checked by a child process of this same
// binary (`--url URL --token-file F` plus the shared options), at most
// `parallel` at a time: a guest that hangs or crashes a check cannot touch
// the others, and each report stays whole. One row per guest is printed as
// it finishes (passed, failed or skipped, with its counts or the reason),
// then a total line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "agentd/protocol/status.h"

namespace agentd::conformance {

struct Target {
  std::string url;
  std::string token_file;
  int line = 0;  // in the targets file, for messages
};

// The targets of a file's text; a malformed line is an error naming it.
Result<std::vector<Target>> ParseTargets(std::string_view text);

// The counts a suite's closing line reports ("3 passed, 1 failed, 2 skipped").
struct SuiteCounts {
  int passed = 0;
  int failed = 0;
  int skipped = 0;
};
// From a child's whole output: its last summary line, if it printed one.
bool ParseSummary(std::string_view output, SuiteCounts* counts);

struct FleetOptions {
  std::string self;                     // this binary, run once per guest
  std::vector<std::string> suite_args;  // --filter, --scratch-root, ... for every guest
  int parallel = 8;
};

// Checks every target; returns the exit status (0 when no guest failed).
int RunFleet(const std::vector<Target>& targets, const FleetOptions& options);

}  // namespace agentd::conformance
