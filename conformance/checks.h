// Registration of the check groups, one file each (checks_*.cc).
#pragma once

#include <cstdlib>
#include <vector>

#include "check.h"

namespace agentd::conformance {

void AddFrontDoorChecks(std::vector<Check>& checks);
void AddExecChecks(std::vector<Check>& checks);
void AddStreamChecks(std::vector<Check>& checks);
void AddRunChecks(std::vector<Check>& checks);
void AddFileChecks(std::vector<Check>& checks);
void AddEditChecks(std::vector<Check>& checks);
void AddTreeChecks(std::vector<Check>& checks);
void AddSearchChecks(std::vector<Check>& checks);
void AddWaitChecks(std::vector<Check>& checks);
void AddHostileChecks(std::vector<Check>& checks);
// With --upgrade-command: upgrades the daemon in place.
void AddUpgradeChecks(std::vector<Check>& checks);
// Last: it resets the guest.
void AddReuseChecks(std::vector<Check>& checks);

}  // namespace agentd::conformance
