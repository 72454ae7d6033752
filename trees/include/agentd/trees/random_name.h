// Names for temporaries and staging directories created beside their
// target, unguessable so that another writer there cannot pre-create them.
#pragma once

#include <string>

namespace agentd {

// "<prefix><16 hex digits>" from getrandom(2), falling back to a counter
// mixed with the pid and time when the entropy pool is not ready.
std::string RandomName(const std::string& prefix);

}  // namespace agentd
