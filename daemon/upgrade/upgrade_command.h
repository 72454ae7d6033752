// `agentd --upgrade`: asks the daemon serving a state directory to upgrade
// in place and reports the outcome (docs/OPERATIONS.md, "Upgrading").
//
// The daemon is found through <state-dir>/agentd.pid ("PID STARTTIME"): a
// signal needs no listener the guest's workload could also reach, and the
// start time makes sure a reused PID is never signalled. The outcome is the
// daemon's <state-dir>/upgrade-status.json once its "attempt" passes the
// one seen before the signal; while the upgrade is pending (it waits for
// work in progress, upgrader.h) says what it waits for on stderr and waits
// on, past the daemon's --upgrade-wait-ms. Prints that JSON on stdout; exit status 0
// when the upgrade took effect, 1 when it failed (the old daemon serves
// on), 2 when no daemon could be asked.
#pragma once

#include <string>

namespace agentd {

int RunUpgradeCommand(const std::string& state_dir);

}  // namespace agentd
