// Which code runtimes this guest can run (docs/PROTOCOL.md, "Run code"):
// a runtime is present when its interpreter is an executable regular file
// in a directory of the PATH its processes get. The probe is a stat and
// access(X_OK) per PATH directory, never a run of the interpreter, so it
// leaves no process behind and costs microseconds. Any thread.
#pragma once

#include <string>
#include <vector>

#include "agentd/protocol/bootstrap.h"
#include "agentd/protocol/runtime.h"

namespace agentd {

// The interpreter's path in `path_list` (a PATH value), or "" when absent.
std::string FindInPath(const std::string& program, const std::string& path_list);
// The runtimes whose interpreter `path_list` (a PATH value) holds.
std::vector<Runtime> PresentRuntimes(const std::string& path_list);
// Whether the PATH of `env` ("NAME=value" strings) holds r's interpreter;
// PATH defaults as in spawn.h when `env` has none.
bool RuntimePresent(Runtime r, const std::vector<std::string>& env);
// The PATH a child with no request env gets: the launch env's, else the
// daemon's, else spawn.h's default (what BuildChildEnv would give, without
// building the whole environment).
std::string ChildPath(const char* const* daemon_env, const EnvList& launch_env);

// The default cwd of a run: --workdir, else /workspace when it is a
// directory, else "/".
std::string DefaultRunCwd(const std::string& workdir);

}  // namespace agentd
