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
#include "proc/raw_syscall.h"

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
  long cwd_len = RawSyscall(SYS_getcwd, reinterpret_cast<long>(cwd), sizeof(cwd));
  long r = RawSyscall(SYS_unshare, CLONE_NEWNS);
  if (r == 0) r = RawSyscall(SYS_mount, 0, reinterpret_cast<long>("/"), 0, MS_REC | MS_SLAVE, 0);
  if (r != 0) return static_cast<int>(-r);
  for (size_t i = 0; i < count; ++i) {
    *failed = paths[i];
    long path = reinterpret_cast<long>(paths[i]);
    r = RawSyscall(SYS_mount, path, path, 0, MS_BIND | MS_REC, 0);
    if (r != 0) return static_cast<int>(-r);
    struct mount_attr attr = {};
    attr.attr_set = MOUNT_ATTR_RDONLY;
    r = RawSyscall(SYS_mount_setattr, AT_FDCWD, path, AT_RECURSIVE, reinterpret_cast<long>(&attr),
                   sizeof(attr));
    if (r == 0) continue;
    if (r != -ENOSYS) return static_cast<int>(-r);
    // Kernels before 5.12 have no recursive attribute change: the bind's
    // top mount only (docs/SECURITY.md says so).
    r = RawSyscall(SYS_mount, 0, path, 0, MS_REMOUNT | MS_BIND | MS_RDONLY, 0);
    if (r != 0) return static_cast<int>(-r);
  }
  *failed = nullptr;
  if (cwd_len > 0 && cwd[0] == '/') {
    r = RawSyscall(SYS_chdir, reinterpret_cast<long>(cwd));
    if (r != 0) return static_cast<int>(-r);
  }
  return 0;
}

namespace {

// The probe child's step (proc/probe_child.h), on a list the daemon keeps
// until the probe is waited for. Plain fields: the child may call no
// instrumented code (a sanitizer build's std::vector accessors are).
struct PathList {
  const char* const* paths;
  size_t count;
};

AGENTD_CHILD_SIDE int ProbeReadonlyMounts(const void* arg) {
  const auto* list = static_cast<const PathList*>(arg);
  const char* failed = nullptr;
  return ApplyReadonlyMounts(list->paths, list->count, &failed);
}

}  // namespace

size_t StartReadonlyMountsProbe(ProbeChildren& probes, const std::vector<std::string>& paths) {
  if (paths.empty()) return probes.Settled(0, "");
  // The child reads them in the daemon's memory until it is waited for.
  const auto* kept = probes.Keep(paths);
  std::vector<const char*> c_paths;
  for (const std::string& p : *kept) c_paths.push_back(p.c_str());
  const auto* kept_c = probes.Keep(std::move(c_paths));
  return probes.Start(ProbeReadonlyMounts, probes.Keep(PathList{kept_c->data(), kept_c->size()}));
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
