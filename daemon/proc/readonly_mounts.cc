#include "proc/readonly_mounts.h"

#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "proc/child_side.h"

namespace agentd {

const std::vector<std::string>& DefaultReadonlyPaths() {
  static const std::vector<std::string> paths = {"/usr", "/etc",   "/bin",   "/sbin",
                                                 "/lib", "/lib32", "/lib64", "/libx32"};
  return paths;
}

namespace {

// `inner` is `outer` or lies beneath it.
bool Covers(const std::string& outer, const std::string& inner) {
  if (outer == "/") return true;
  return inner.size() >= outer.size() && inner.compare(0, outer.size(), outer) == 0 &&
         (inner.size() == outer.size() || inner[outer.size()] == '/');
}

}  // namespace

Result<std::vector<std::string>> ResolveReadonlyPaths(const std::vector<std::string>& optional,
                                                      const std::vector<std::string>& required) {
  std::vector<std::string> resolved;
  auto add = [&resolved](const std::string& path, bool must_exist) -> Status {
    char real[PATH_MAX];
    if (::realpath(path.c_str(), real) == nullptr) {
      if (!must_exist) return Status::Ok();
      return Status::InvalidRequest("--readonly-path " + path + ": " + std::strerror(errno))
          .With("path", path);
    }
    resolved.emplace_back(real);
    return Status::Ok();
  };
  for (const std::string& p : optional) AGENTD_RETURN_IF_ERROR(add(p, false));
  for (const std::string& p : required) AGENTD_RETURN_IF_ERROR(add(p, true));
  // Sorted, a path comes right after any path that covers it.
  std::sort(resolved.begin(), resolved.end());
  std::vector<std::string> out;
  for (std::string& p : resolved) {
    if (!out.empty() && Covers(out.back(), p)) continue;
    out.push_back(std::move(p));
  }
  return out;
}

AGENTD_CHILD_SIDE int ApplyReadonlyMounts(const char* const* paths, size_t count,
                                          const char** failed) {
  *failed = nullptr;
  // A relative path would still resolve in the old view through the
  // working directory; re-entered below by name, it lies in the new one.
  char cwd[PATH_MAX];
  long cwd_len = ::syscall(SYS_getcwd, cwd, sizeof(cwd));
  if (::syscall(SYS_unshare, CLONE_NEWNS) != 0) return errno;
  if (::syscall(SYS_mount, nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) return errno;
  for (size_t i = 0; i < count; ++i) {
    *failed = paths[i];
    if (::syscall(SYS_mount, paths[i], paths[i], nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      return errno;
    }
    struct mount_attr attr = {};
    attr.attr_set = MOUNT_ATTR_RDONLY;
    if (::syscall(SYS_mount_setattr, AT_FDCWD, paths[i], AT_RECURSIVE, &attr, sizeof(attr)) == 0) {
      continue;
    }
    if (errno != ENOSYS) return errno;
    // Kernels before 5.12 have no recursive attribute change: the bind's
    // top mount only (docs/SECURITY.md says so).
    if (::syscall(SYS_mount, nullptr, paths[i], nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY,
                  nullptr) != 0) {
      return errno;
    }
  }
  *failed = nullptr;
  if (cwd_len > 0 && cwd[0] == '/' && ::syscall(SYS_chdir, cwd) != 0) return errno;
  return 0;
}

size_t StartReadonlyMountsProbe(ProbeChildren& probes, const std::vector<std::string>& paths) {
  if (paths.empty()) return probes.Settled(0, "");
  std::vector<const char*> c_paths;  // the child's own copy is taken at the fork
  for (const std::string& p : paths) c_paths.push_back(p.c_str());
  return probes.Start(
      [](const void* arg) {
        const auto* list = static_cast<const std::vector<const char*>*>(arg);
        const char* failed = nullptr;
        return ApplyReadonlyMounts(list->data(), list->size(), &failed);
      },
      &c_paths);
}

std::string ReadonlyMountsVerdict(const ProbeChildren& probes, size_t i) {
  std::string why;
  int err = probes.Outcome(i, &why);
  if (err <= 0) return err == 0 ? "" : why;
  why = "cannot bind paths read-only in a private mount namespace (" +
        std::string(std::strerror(err)) + ")";
  if (err == EPERM) why += ": it needs CAP_SYS_ADMIN and a seccomp policy that allows mounts";
  return why;
}

}  // namespace agentd
