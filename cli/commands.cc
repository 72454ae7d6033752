// The command table.
#include "commands.h"

namespace agentd::cli {

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"health", "", "show the daemon's health (no token needed)", {}, 0, 0, &CmdHealth},
      {"bootstrap",
       "",
       "set the bearer token (--token) and launch environment of a fresh daemon",
       {{"env", "K=V", "launch environment variable", true}},
       0,
       0,
       &CmdBootstrap},
      {"manifest",
       "",
       "list every command, flag, exit code and error code as JSON",
       {},
       0,
       0,
       &CmdManifest},
      {"version", "", "show agentctl's version and the daemon's", {}, 0, 0, &CmdVersion},
  };
  return commands;
}

}  // namespace agentd::cli
