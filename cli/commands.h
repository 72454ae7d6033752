// Command implementations, one group per file (cmd_*.cc).
#pragma once

#include "command.h"

namespace agentd::cli {

// cmd_basic.cc
int CmdHealth(Context& ctx);
int CmdBootstrap(Context& ctx);
int CmdVersion(Context& ctx);
int CmdManifest(Context& ctx);

}  // namespace agentd::cli
