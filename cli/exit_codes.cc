#include "exit_codes.h"

namespace agentd::cli {

const std::vector<ExitCodeInfo>& ExitCodeTable() {
  static const std::vector<ExitCodeInfo> table = {
      {kExitOk, "ok", "success"},
      {kExitFailure, "failure", "a failure not covered below"},
      {kExitUsage, "usage", "bad command line; see --help"},
      {kExitInvalidRequest, "invalid_request",
       "the daemon refused the request as invalid (HTTP 4xx)"},
      {kExitNotFound, "not_found", "no such exec, file, directory or route"},
      {kExitUnreachable, "unreachable", "no answer from the daemon (connection refused or lost)"},
      {kExitDaemonError, "daemon_error", "the daemon failed (HTTP 5xx)"},
      {kExitConflict, "conflict", "conflict with the daemon's state (HTTP 409, 410, 412)"},
      {kExitStorage, "storage", "insufficient storage or an I/O error in the guest"},
      {kExitTimeout, "timeout", "agentctl's --timeout passed before the daemon answered"},
      {kExitProtocol, "protocol",
       "the answer was not the agentd protocol, or another protocol version"},
      {kExitAuth, "auth", "the daemon is not bootstrapped or the token is wrong"},
  };
  return table;
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case ErrorCode::kOk:
      return kExitOk;
    case ErrorCode::kTransport:
      return kExitUnreachable;
    case ErrorCode::kDeadlineExceeded:
      return kExitTimeout;
    case ErrorCode::kProtocolError:
    case ErrorCode::kProtocolMismatch:
      return kExitProtocol;
    case ErrorCode::kUnauthorized:
    case ErrorCode::kNotBootstrapped:
      return kExitAuth;
    case ErrorCode::kNotFound:
    case ErrorCode::kExecNotFound:
    case ErrorCode::kRouteNotFound:
      return kExitNotFound;
    case ErrorCode::kInsufficientStorage:
    case ErrorCode::kIoError:
      return kExitStorage;
    default:
      break;
  }
  int http = status.http_status();
  if (http == 409 || http == 410 || http == 412) return kExitConflict;
  if (http >= 500) return kExitDaemonError;
  if (http >= 400) return kExitInvalidRequest;
  return kExitFailure;
}

}  // namespace agentd::cli
