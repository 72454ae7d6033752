// agentctl: the command-line face of the agentd client library.
#include <signal.h>

#include "command.h"

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);
  return agentd::cli::RunCli(argc, argv);
}
