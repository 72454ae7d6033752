// HandoverState: what a daemon upgrading in place tells the binary that
// replaces it (docs/OPERATIONS.md, "Upgrading"), as a JSON file in the
// state directory. Descriptors are named by number: they are inherited
// across the execve. The token and launch environment never go into the
// file: they travel in an inherited memfd (`secrets_fd`), so they stay in
// memory as auth/bootstrap_state.h promises.
//
// `format` changes whenever a field's meaning does; a binary accepts only
// its own format, and the old daemon asks the new binary to check the file
// (--upgrade-check) before it replaces itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agentd/protocol/json.h"
#include "agentd/protocol/status.h"

namespace agentd {

// Format 2 adds `streams` (tunnels and watch streams) and `init_pid` (PID 1
// mode's workload); format 3 added `contexts`, each as its own fields;
// format 4 hands each context over as its note (run/context_notes.h, with
// its kept answers and the 410 run_lost of runs an earlier crash cut) and
// its channel's descriptor. A daemon writes the lowest format that holds
// what it hands over, so a binary that reads only an earlier one can still
// take over from it (and one that would lose a context or start the
// workload again refuses). This one reads 1, 2 and 4; format 3, written
// only by development builds before 4, it refuses (the old daemon keeps
// serving, its contexts intact).
inline constexpr int64_t kHandoverFormat = 4;
inline constexpr int64_t kHandoverFormatWithContextFields = 3;
inline constexpr int64_t kHandoverFormatWithStreams = 2;
inline constexpr int64_t kHandoverFormatWithoutStreams = 1;

struct HandoverState {
  int64_t format = kHandoverFormat;
  std::string from_version;  // the binary that wrote it
  int64_t upgrades = 0;      // successful upgrades, this one included
  int64_t upgrade_failures = 0;
  int64_t attempt = 0;         // the upgrade request this answers
  int64_t uptime_ms = 0;       // since the daemon first started
  int64_t generation = 0;      // the exec engine's (docs/PROTOCOL.md, "Reuse")
  std::vector<int> listeners;  // in --listen order
  int secrets_fd = -1;
  json::Array execs;     // exec/exec_handover.cc's entries
  json::Array streams;   // server/handed_streams.h's entries
  json::Array contexts;  // run/context_handover.cc's entries
  // PID 1 mode (--init): the workload's pid, -1 once it exited; absent
  // otherwise.
  std::optional<int64_t> init_pid;
};

std::string EncodeHandover(const HandoverState& state);
// invalid_request naming the field, or naming both formats when they differ.
Result<HandoverState> DecodeHandover(std::string_view text);

// The token and launch environment, in a memfd (close-on-exec until the upgrade clears it) rewound
// for the reader; and read back (the descriptor is closed).
Result<int> WriteSecrets(std::string_view text);
Result<std::string> ReadSecrets(int fd);

}  // namespace agentd
