#include "proc/runtimes.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "proc/child_env.h"
#include "proc/spawn.h"

namespace agentd {
namespace {

std::string PathOf(const std::vector<std::string>& env) {
  std::string path;
  if (!FindEnv(env, "PATH", &path)) path = kDefaultPath;
  return path;
}

}  // namespace

std::string FindInPath(const std::string& program, const std::string& path_list) {
  size_t start = 0;
  for (;;) {
    size_t end = path_list.find(':', start);
    std::string dir = path_list.substr(start, end == std::string::npos ? end : end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + program;
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    if (end == std::string::npos) return "";
    start = end + 1;
  }
}

RuntimeCheck CheckRuntimeInPath(Runtime r, const std::string& path_list) {
  RuntimeCheck out;
  out.runtime = r;
  std::string program(RuntimeProgram(r));
  if (!FindInPath(program, path_list).empty()) return out;
  // Absent as an executable: name the first entry that is there but unusable.
  size_t start = 0;
  for (;;) {
    size_t end = path_list.find(':', start);
    std::string dir = path_list.substr(start, end == std::string::npos ? end : end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + program;
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0) {
      out.code = "not_executable";
      if (!S_ISREG(st.st_mode)) {
        out.reason = candidate + " is not a regular file";
      } else {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        out.reason = candidate + " is not executable (mode " + mode + ")";
      }
      out.reason += " and no other PATH directory has " + program + " (" + path_list + ")";
      return out;
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  out.code = "interpreter_not_found";
  out.reason = program + " is not on PATH (" + path_list + ")";
  return out;
}

std::vector<RuntimeCheck> CheckRuntimes(const std::string& path_list) {
  std::vector<RuntimeCheck> out;
  for (Runtime r : kAllRuntimes) out.push_back(CheckRuntimeInPath(r, path_list));
  return out;
}

RuntimeCheck CheckRuntimeForEnv(Runtime r, const std::vector<std::string>& env) {
  return CheckRuntimeInPath(r, PathOf(env));
}

bool RuntimePresent(Runtime r, const std::vector<std::string>& env) {
  return !FindInPath(std::string(RuntimeProgram(r)), PathOf(env)).empty();
}

std::vector<Runtime> PresentRuntimes(const std::string& path_list) {
  std::vector<Runtime> out;
  for (Runtime r : kAllRuntimes) {
    if (!FindInPath(std::string(RuntimeProgram(r)), path_list).empty()) out.push_back(r);
  }
  return out;
}

std::string ChildPath(const char* const* daemon_env, const EnvList& launch_env) {
  // The last of repeated names wins, as in BuildChildEnv.
  const std::string* from_launch = nullptr;
  for (const auto& [name, value] : launch_env) {
    if (name == "PATH") from_launch = &value;
  }
  if (from_launch) return *from_launch;
  const char* from_daemon = nullptr;
  for (const char* const* e = daemon_env; e && *e; ++e) {
    if (std::string_view(*e).starts_with("PATH=")) from_daemon = *e + 5;
  }
  return from_daemon ? from_daemon : kDefaultPath;
}

std::string DefaultRunCwd(const std::string& workdir) {
  if (!workdir.empty()) return workdir;
  struct stat st;
  if (::stat("/workspace", &st) == 0 && S_ISDIR(st.st_mode)) return "/workspace";
  return "/";
}

}  // namespace agentd
