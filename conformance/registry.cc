#include "checks.h"

namespace agentd::conformance {

const std::vector<Check>& AllChecks() {
  static const std::vector<Check> checks = [] {
    std::vector<Check> all;
    AddFrontDoorChecks(all);
    AddExecChecks(all);
    AddStreamChecks(all);
    AddRunChecks(all);
    AddFileChecks(all);
    AddEditChecks(all);
    AddTreeChecks(all);
    AddSearchChecks(all);
    AddWaitChecks(all);
    AddHostileChecks(all);
    AddUpgradeChecks(all);
    AddReuseChecks(all);
    return all;
  }();
  return checks;
}

}  // namespace agentd::conformance
