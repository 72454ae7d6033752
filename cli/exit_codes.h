// agentctl's exit codes: a documented, append-only table (printed by
// `agentctl manifest`, listed in docs/CLI.md). Commands that run a remote
// process (exec, run, wait) exit with the remote exit code instead when the
// remote process ran: 0-255 as the process ended, 124 for a timeout,
// 128+n for a signal.
#pragma once

#include <string_view>
#include <vector>

#include "agentd/protocol/status.h"

namespace agentd::cli {

struct ExitCodeInfo {
  int code;
  std::string_view name;
  std::string_view meaning;
};

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInvalidRequest = 65;  // the daemon refused the request (4xx)
inline constexpr int kExitNotFound = 66;        // no such exec, file or route
inline constexpr int kExitUnreachable = 69;     // no answer from the daemon
inline constexpr int kExitDaemonError = 70;     // the daemon failed (5xx)
inline constexpr int kExitConflict = 73;  // conflict, released or precondition (409, 410, 412)
inline constexpr int kExitStorage = 74;   // insufficient storage or I/O error
inline constexpr int kExitTimeout = 75;   // agentctl's own deadline passed
inline constexpr int kExitProtocol = 76;  // the answer was not the agentd protocol
inline constexpr int kExitAuth = 77;      // not bootstrapped, or a wrong token

const std::vector<ExitCodeInfo>& ExitCodeTable();
// The exit code for a failed call.
int ExitCodeFor(const Status& status);

}  // namespace agentd::cli
