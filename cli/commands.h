// Command implementations, one group per file (cmd_*.cc).
#pragma once

#include "command.h"

namespace agentd::cli {

// cmd_basic.cc
int CmdHealth(Context& ctx);
int CmdBootstrap(Context& ctx);
int CmdReset(Context& ctx);
int CmdVersion(Context& ctx);
int CmdManifest(Context& ctx);

// cmd_exec.cc
int CmdExec(Context& ctx);
int CmdStart(Context& ctx);
// cmd_exec_tty.cc: exec --tty
int RunExecOnTty(Context& ctx, ExecStartRequest req, std::string id);
// cmd_watch_forward.cc
int CmdWatch(Context& ctx);
int CmdPorts(Context& ctx);
int CmdForward(Context& ctx);
// cmd_exec_ops.cc
int CmdPoll(Context& ctx);
int CmdLogs(Context& ctx);
int CmdWait(Context& ctx);
// cmd_wait.cc: wait port N, wait path P, wait output ID PATTERN
bool IsConditionWait(const Context& ctx);
int CmdWaitCondition(Context& ctx, std::chrono::milliseconds limit);
int CmdAck(Context& ctx);
int CmdEgress(Context& ctx);
int CmdKill(Context& ctx);
int CmdPs(Context& ctx);
int CmdStdin(Context& ctx);

// cmd_run.cc
int CmdRun(Context& ctx);
// A run answer (of /v1/run or a context run): --json prints it; else the
// code's output, the summary, the exception, result and changed files, and
// the exit code is the remote one.
int AnswerRun(Context& ctx, const RunResponse& r);
// cmd_context.cc: context create|run|get|list|reset|delete
int CmdContext(Context& ctx);
// cmd_files.cc
int CmdCat(Context& ctx);
int CmdPut(Context& ctx);
int CmdStat(Context& ctx);
int CmdLs(Context& ctx);
int CmdMkdir(Context& ctx);
int CmdEdit(Context& ctx);
int CmdMv(Context& ctx);
int CmdRm(Context& ctx);
// cmd_cp.cc
int CmdCp(Context& ctx);
// cmd_mcp.cc
int CmdMcp(Context& ctx);
// cmd_search.cc
int CmdGrep(Context& ctx);
int CmdGlob(Context& ctx);

}  // namespace agentd::cli
