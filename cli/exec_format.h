// Shared pieces of the exec commands: building a start request from flags,
// and showing exec objects to humans.
#pragma once

#include <string>

#include "agentd/client/exec.h"
#include "command.h"

namespace agentd::cli {

// From --env/--user/--group/--cwd/--timeout/--kill-grace/--shell and the
// positional command; usage errors name the flag.
Result<ExecStartRequest> StartRequestFromArgs(const ParsedArgs& args);
// --egress MODE with --allow, --deny and --dns (exec, start, run, context
// create); nullopt without --egress, a usage error for rules without it.
Result<std::optional<EgressPolicy>> EgressFromArgs(const ParsedArgs& args);
// One exec object as an aligned two-column table.
std::string DescribeExec(const ExecInfo& e);
// The addresses the host names of an egress policy resolved to at start,
// "mirror.internal 10.1.2.3 2001:db8::7; other 10.1.2.4"; empty without names.
std::string DescribeResolved(const EgressPolicy& p);
// The shell-style exit status of an exited exec (exit code, 124, 128+n).
int RemoteExitStatus(const ExecInfo& e);
// Writes all of `bytes` to a descriptor (stdout, stderr), retrying short writes.
void WriteAllTo(int fd, std::string_view bytes);

}  // namespace agentd::cli
