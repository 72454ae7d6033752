// Which code runtimes this guest can run (docs/PROTOCOL.md, "Run code"):
// a runtime is present when its interpreter is an executable regular file
// in a directory of the PATH its processes get. The probe is a stat and
// access(X_OK) per PATH directory, never a run of the interpreter, so it
// leaves no process behind and costs microseconds. Any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agentd/protocol/bootstrap.h"
#include "agentd/protocol/runtime.h"

namespace agentd {

// Whether a runtime can run here, and why not (docs/PROTOCOL.md, "Health":
// runtimes_unavailable). `code` is "" when it can; else
// "interpreter_not_found" (no PATH directory has the program) or
// "not_executable" (one has it, but not as an executable regular file);
// `reason` names the program, what was found and the PATH.
struct RuntimeCheck {
  Runtime runtime = Runtime::kShell;
  std::string code;
  std::string reason;
  // When it can: the interpreter found, and what identifies that file's
  // contents (a self-test's verdict holds for exactly this file:
  // proc/runtime_self_test.h).
  std::string program_path;
  struct Identity {
    uint64_t dev = 0, ino = 0, size = 0;
    int64_t mtime_ns = 0;
    bool operator==(const Identity&) const = default;
  } identity;
  bool ok() const { return code.empty(); }
  bool operator==(const RuntimeCheck&) const = default;
};

RuntimeCheck CheckRuntimeInPath(Runtime r, const std::string& path_list);
// CheckRuntimeInPath for every runtime, in kAllRuntimes order.
std::vector<RuntimeCheck> CheckRuntimes(const std::string& path_list);
// The check of r in the PATH of `env` ("NAME=value" strings; PATH
// defaults as in spawn.h when `env` has none).
RuntimeCheck CheckRuntimeForEnv(Runtime r, const std::vector<std::string>& env);

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
