#include "agentd/protocol/runtime.h"

namespace agentd {

std::string_view RuntimeName(Runtime r) {
  switch (r) {
    case Runtime::kShell:
      return "shell";
    case Runtime::kPython:
      return "python";
    case Runtime::kTs:
      return "ts";
  }
  return "shell";
}

std::optional<Runtime> ParseRuntime(std::string_view name) {
  for (Runtime r : kAllRuntimes) {
    if (RuntimeName(r) == name) return r;
  }
  return std::nullopt;
}

std::string_view RuntimeProgram(Runtime r) {
  switch (r) {
    case Runtime::kShell:
      return "sh";
    case Runtime::kPython:
      return "python3";
    case Runtime::kTs:
      return "bun";
  }
  return "sh";
}

std::vector<std::string> RuntimeArgv(Runtime r, const std::string& code) {
  std::string flag = r == Runtime::kTs ? "-e" : "-c";
  return {std::string(RuntimeProgram(r)), flag, code};
}

}  // namespace agentd
