// Code runtimes (docs/PROTOCOL.md, "Run code"): the names a request uses
// and the one argv each runs the code with. No I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentd {

enum class Runtime { kShell, kPython, kTs };

inline constexpr Runtime kAllRuntimes[] = {Runtime::kShell, Runtime::kPython, Runtime::kTs};

// "shell", "python", "ts".
std::string_view RuntimeName(Runtime r);
std::optional<Runtime> ParseRuntime(std::string_view name);
// The interpreter searched in PATH: "sh", "python3", "bun".
std::string_view RuntimeProgram(Runtime r);
// {"sh", "-c", code}, {"python3", "-c", code}, {"bun", "-e", code}.
std::vector<std::string> RuntimeArgv(Runtime r, const std::string& code);

}  // namespace agentd
