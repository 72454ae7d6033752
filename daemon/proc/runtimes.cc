#include "proc/runtimes.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "proc/child_env.h"
#include "proc/spawn.h"

namespace agentd {
namespace {

std::string PathOf(const std::vector<std::string>& env) {
  std::string path;
  if (!FindEnv(env, "PATH", &path)) path = kDefaultPath;
  return path;
}

// `program` in each directory of `path_list`, in order (an empty entry is
// the current directory, as for execvp).
std::vector<std::string> PathCandidates(const std::string& program, const std::string& path_list) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t end = path_list.find(':', start);
    std::string dir = path_list.substr(start, end == std::string::npos ? end : end - start);
    out.push_back((dir.empty() ? std::string(".") : dir) + "/" + program);
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

bool IsExecutableFile(const std::string& path, const struct stat& st) {
  return S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::string FindInPath(const std::string& program, const std::string& path_list) {
  for (const std::string& candidate : PathCandidates(program, path_list)) {
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && IsExecutableFile(candidate, st)) return candidate;
  }
  return "";
}

RuntimeCheck CheckRuntimeInPath(Runtime r, const std::string& path_list) {
  RuntimeCheck out;
  out.runtime = r;
  std::string program(RuntimeProgram(r));
  // One walk: the first executable entry makes the runtime available;
  // otherwise the first entry that is there but unusable is named.
  std::string unusable;
  for (const std::string& candidate : PathCandidates(program, path_list)) {
    struct stat st;
    if (::stat(candidate.c_str(), &st) != 0) continue;
    if (IsExecutableFile(candidate, st)) {
      out.program_path = candidate;
      out.identity = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                      static_cast<uint64_t>(st.st_size),
                      static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
      return out;
    }
    if (!unusable.empty()) continue;
    if (!S_ISREG(st.st_mode)) {
      unusable = candidate + " is not a regular file";
    } else {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      unusable = candidate + " is not executable (mode " + mode + ")";
    }
  }
  if (!unusable.empty()) {
    out.code = "not_executable";
    out.reason = unusable + " and no other PATH directory has " + program + " (" + path_list + ")";
  } else {
    out.code = "interpreter_not_found";
    out.reason = program + " is not on PATH (" + path_list + ")";
  }
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
