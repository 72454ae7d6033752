// TenantCgroup: the generation's group (limits/tenant_cgroup.h).
#include "limits/tenant_cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "agentd/trees/posix_error.h"
#include "limits/cgroup_info.h"
#include "sys/read_file.h"
#include "sys/text_fields.h"

namespace agentd {
namespace {

// A tenant could make groups inside its own (as root in a delegated
// namespace); deeper than this is not walked (cgroup.kill still reaches it).
constexpr int kMaxDepth = 8;

std::string ReadCgroupText(const std::string& path) {
  Result<std::string> r = ReadFileToString(path, 1 << 20);
  return r.ok() ? *r : std::string();
}

std::vector<std::string> ChildGroups(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_type == DT_DIR && e->d_name[0] != '.') out.push_back(dir + "/" + e->d_name);
  }
  ::closedir(d);
  return out;
}

void CollectMembers(const std::string& dir, int depth, std::vector<pid_t>& out) {
  std::string text = ReadCgroupText(dir + "/cgroup.procs");  // the views below point into it
  for (std::string_view line : SplitFields(text, '\n')) {
    pid_t pid = static_cast<pid_t>(std::atoi(std::string(line).c_str()));
    if (pid > 0) out.push_back(pid);
  }
  if (depth >= kMaxDepth) return;
  for (const std::string& child : ChildGroups(dir)) CollectMembers(child, depth + 1, out);
}

std::string RemoveBelow(const std::string& dir, int depth) {
  std::string failed;
  if (depth < kMaxDepth) {
    for (const std::string& child : ChildGroups(dir)) {
      std::string f = RemoveBelow(child, depth + 1);
      if (failed.empty()) failed = std::move(f);
    }
  }
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT && failed.empty()) {
    failed = "cannot remove " + dir + ": " + std::strerror(errno);
  }
  return failed;
}

// "memory pids cpu\n" -> "+memory +pids +cpu": the generation's group hands
// its base's controllers on to the exec groups beneath it.
std::string EnableString(std::string_view controllers) {
  std::string out;
  for (std::string_view c : SplitFields(controllers, ' ')) {
    while (!c.empty() && (c.back() == '\n' || c.back() == ' ')) c.remove_suffix(1);
    if (c.empty()) continue;
    if (!out.empty()) out += ' ';
    out += '+';
    out += c;
  }
  return out;
}

// Whether `dir` is the "agentd-tenant-<pid>" base of a daemon that no
// longer runs.
bool IsDeadDaemonBase(std::string_view dir) {
  size_t slash = dir.rfind('/');
  std::string_view name = slash == std::string_view::npos ? dir : dir.substr(slash + 1);
  if (!name.starts_with("agentd-tenant-")) return false;
  pid_t pid = static_cast<pid_t>(std::atoi(std::string(name.substr(14)).c_str()));
  if (pid <= 0 || pid == ::getpid()) return false;
  return !(::kill(pid, 0) == 0 || errno == EPERM);  // else that daemon still runs
}

// Bare "agentd-tenant-<pid>" groups (no generation group left below them)
// of daemons that no longer run. Only bare ones: the pid in the name is the
// owner's in its own PID namespace, so a daemon in another namespace (PID 1
// mode, a rootfs guest, `unshare --pid`) cannot tell a live owner from a
// dead one by it. Removing the empty groups below such a base took a live,
// idle daemon's generation group away, and its next exec failed to join it
// (ENODEV, exit 126). A crashed daemon's tree is ended and removed by the
// successor on its state dir instead (adopted at Open, ended by its first
// reset); one nobody restarts stays, empty, until the machine reboots.
// The caller has checked InInitialPidNamespace() (a file read and two
// stats: once per sweep, not once per group). True when `dir` was removed.
bool RemoveIfBareDeadBase(const std::string& dir) {
  return IsDeadDaemonBase(dir) && ChildGroups(dir).empty() && ::rmdir(dir.c_str()) == 0;
}

// This daemon's base: "agentd-tenant-<pid>", or with "-<n>" added when
// that name is taken. The pid is this daemon's in its own PID namespace,
// so daemons in different namespaces sharing a cgroup (two `--init`
// guests, `unshare --pid`) both are pid 1: sharing one base, the reset of
// either ended the other's tenant. A taken name is reused only when it is
// the one this state dir recorded and carries this pid: an upgrade in
// place, whose generation's execs run in it. (IsDeadDaemonBase reads the
// pid before the "-<n>".)
Result<std::string> MakeOwnBase(const std::string& parent, const std::string& previous_base) {
  std::string stem = JoinPath(parent, "agentd-tenant-" + std::to_string(::getpid()));
  if (previous_base == stem || (previous_base.starts_with(stem + "-") &&
                                previous_base.find('/', stem.size()) == std::string::npos)) {
    struct stat st;
    if (::stat(previous_base.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return previous_base;
  }
  constexpr int kMaxNames = 64;
  for (int n = 1; n <= kMaxNames; ++n) {
    std::string name = n == 1 ? stem : stem + "-" + std::to_string(n);
    if (::mkdir(name.c_str(), 0755) == 0) return name;
    if (errno != EEXIST) {
      return Status::Error(ErrorCode::kIoError,
                           "cannot create " + name + ": " + std::strerror(errno));
    }
  }
  return Status::Error(ErrorCode::kIoError, "cannot create " + stem + ": it and " +
                                                std::to_string(kMaxNames - 1) +
                                                " numbered names are taken");
}

void RemoveStaleTenantGroups(const std::string& parent) {
  if (!InInitialPidNamespace()) return;
  for (const std::string& dir : ChildGroups(parent)) (void)RemoveIfBareDeadBase(dir);
}

}  // namespace

std::vector<pid_t> TenantCgroup::Members(const std::string& dir) {
  std::vector<pid_t> out;
  CollectMembers(dir, 0, out);
  return out;
}

std::string TenantCgroup::RemoveTree(const std::string& dir) { return RemoveBelow(dir, 0); }

void TenantCgroup::Open(bool wanted, const std::string& limiter_parent, int64_t generation,
                        const std::string& previous_base) {
  // Adopted whether or not this daemon can make groups: a reset ends the
  // predecessor's tenant either way.
  struct stat st;
  if (!previous_base.empty() && IsDeadDaemonBase(previous_base) &&
      ::stat(previous_base.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    adopted_ = previous_base;
  }
  if (!wanted) {
    why_ = "--reset-cgroup off";
    return;
  }
  if (!limiter_parent.empty()) {
    base_ = limiter_parent;
  } else {
    std::string mount;
    for (const CgroupMount& m : ParseCgroupMounts(ReadCgroupText("/proc/self/mountinfo"))) {
      if (m.v2 && mount.empty()) mount = m.mount_point;
    }
    std::string own;
    bool member = false;
    for (const ProcCgroup& c : ParseProcCgroup(ReadCgroupText("/proc/self/cgroup"))) {
      if (c.hierarchy == 0 && c.controllers.empty()) {
        own = c.path;
        member = true;
      }
    }
    if (mount.empty() || !member) {
      why_ = "no cgroup2 hierarchy is mounted";
      return;
    }
    std::string parent = JoinPath(mount, own);
    sweep_parent_ = parent;
    // The predecessor's base alone is swept here: a bare one is nothing
    // to adopt (the sweep of the others runs later, elsewhere).
    if (!adopted_.empty() && InInitialPidNamespace() && RemoveIfBareDeadBase(adopted_)) {
      adopted_.clear();
    }
    Result<std::string> made = MakeOwnBase(parent, previous_base);
    if (!made.ok()) {
      why_ = made.status().message();
      return;
    }
    base_ = std::move(*made);
    own_base_ = true;
  }
  enable_ = EnableString(ReadCgroupText(base_ + "/cgroup.subtree_control"));
  Status made = MakeGeneration(generation);
  if (!made.ok()) {
    why_ = made.message();
    if (own_base_) ::rmdir(base_.c_str());
    return;
  }
  why_.clear();
}

void TenantCgroup::SweepStale(const std::string& parent) { RemoveStaleTenantGroups(parent); }

Status TenantCgroup::MakeGeneration(int64_t generation) {
  std::string dir = base_ + "/g" + std::to_string(generation);
  // EEXIST: an upgrade in place hands the generation's execs over in it.
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return PosixError(errno, "cannot create cgroup", dir);
  }
  if (!enable_.empty()) {
    UniqueFd control(::open((dir + "/cgroup.subtree_control").c_str(), O_WRONLY | O_CLOEXEC));
    if (!control || ::write(control.get(), enable_.data(), enable_.size()) < 0) {
      Status s = PosixError(errno, "cannot enable controllers in", dir);
      ::rmdir(dir.c_str());
      return s;
    }
  }
  std::string leaf = dir + "/run";
  if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) {
    Status s = PosixError(errno, "cannot create cgroup", leaf);
    ::rmdir(dir.c_str());
    return s;
  }
  UniqueFd procs(::open((leaf + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
  if (!procs) {
    Status s = PosixError(errno, "cannot open", leaf + "/cgroup.procs");
    (void)RemoveBelow(dir, 0);
    return s;
  }
  dir_ = std::move(dir);
  leaf_procs_ = std::move(procs);
  return Status::Ok();
}

std::string TenantCgroup::Advance(int64_t generation) {
  if (!available()) return "";
  std::string old = std::move(dir_);
  dir_.clear();
  leaf_procs_.reset();
  Status made = MakeGeneration(generation);
  if (!made.ok()) why_ = made.message();
  return old;
}

void TenantCgroup::Disable(std::string why) {
  leaf_procs_.reset();
  if (!dir_.empty()) (void)RemoveBelow(dir_, 0);
  if (own_base_) ::rmdir(base_.c_str());
  dir_.clear();
  why_ = std::move(why);
}

void TenantCgroup::Close() {
  leaf_procs_.reset();
  // Groups still holding processes (held execs that outlive the daemon)
  // stay; the next start removes them once empty.
  if (!dir_.empty()) (void)RemoveBelow(dir_, 0);
  if (own_base_) ::rmdir(base_.c_str());
}

std::string TenantCgroup::TakeAdopted() {
  std::string out;
  out.swap(adopted_);
  return out;
}

}  // namespace agentd
