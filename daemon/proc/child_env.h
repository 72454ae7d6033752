// The environment of a child (docs/PROTOCOL.md, "Start"): the daemon's own
// environment without any AGENTD_* variable, overlaid by the launch env
// from bootstrap, then by HOME, USER and LOGNAME of the user the child runs
// as, then by the request's env (a null value unsets; the request wins on
// every shared key). Pure; any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "agentd/protocol/bootstrap.h"
#include "agentd/protocol/object_reader.h"
#include "proc/user_db.h"

namespace agentd {

// `daemon_env` is an environ-style, nullptr-terminated array (may be null).
// Returns "NAME=value" strings, daemon order first, new names appended.
std::vector<std::string> BuildChildEnv(const char* const* daemon_env, const EnvList& launch_env,
                                       const Credentials* identity, const EnvOverlay& request_env);

// Sets NAME=value in a list built above (replacing or appending).
void SetEnv(std::vector<std::string>& env, std::string_view name, std::string_view value);

// The value of NAME in a list built above, or nullptr.
const std::string* FindEnv(const std::vector<std::string>& env, std::string_view name,
                           std::string* value_out);

}  // namespace agentd
