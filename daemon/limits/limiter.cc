// Limiter: mechanism detection, groups and rlimits (limits/limiter.h).
#include "limits/limiter.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "agentd/trees/posix_error.h"
#include "limits/cgroup_info.h"
#include "sys/read_file.h"

namespace agentd {
namespace {

constexpr size_t kSmallFile = 1 << 20;
constexpr int kKillRounds = 50;
constexpr long long kCpuPeriodUs = 100000;

std::string ReadSmall(const std::string& path) {
  Result<std::string> r = ReadFileToString(path, kSmallFile);
  return r.ok() ? *r : std::string();
}

Status WriteText(const std::string& path, std::string_view text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return PosixError(errno, "cannot open", path);
  ssize_t n = ::write(fd.get(), text.data(), text.size());
  if (n < 0) return PosixError(errno, "cannot write", path);
  return Status::Ok();
}

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  for (const std::string& x : v) {
    if (x == s) return true;
  }
  return false;
}

bool IsDir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return Status::Ok();
  return PosixError(errno, "cannot create cgroup", path);
}

std::string ParentName() { return "agentd-" + std::to_string(::getpid()); }

// Removes empty "agentd-<pid>" groups of daemons that no longer run (and
// their empty children). Best effort.
// Skipped outside the initial PID namespace (InInitialPidNamespace): from
// there a live, idle daemon's empty group looked dead, and its next limited
// exec could not create its group below it.
void RemoveStale(const std::string& dir) {
  if (!InInitialPidNamespace()) return;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (!name.starts_with("agentd-")) continue;
    pid_t pid = static_cast<pid_t>(std::atoi(e->d_name + 7));
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(pid, 0) == 0 || errno == EPERM) continue;  // that daemon still runs
    stale.emplace_back(name);
  }
  ::closedir(d);
  for (const std::string& name : stale) {
    std::string parent = dir + "/" + name;
    if (DIR* p = ::opendir(parent.c_str())) {
      std::vector<std::string> children;
      while (dirent* e = ::readdir(p)) {
        if (e->d_type == DT_DIR && e->d_name[0] != '.') children.emplace_back(e->d_name);
      }
      ::closedir(p);
      for (const std::string& c : children) ::rmdir((parent + "/" + c).c_str());
    }
    ::rmdir(parent.c_str());
  }
}

std::vector<pid_t> ListProcs(const std::string& dir) {
  std::vector<pid_t> out;
  std::string text = ReadSmall(dir + "/cgroup.procs");
  size_t i = 0;
  while (i < text.size()) {
    size_t nl = text.find('\n', i);
    if (nl == std::string::npos) nl = text.size();
    pid_t pid = static_cast<pid_t>(std::atoi(text.substr(i, nl - i).c_str()));
    if (pid > 0) out.push_back(pid);
    i = nl + 1;
  }
  return out;
}

}  // namespace

std::string_view LimitMechanismName(LimitMechanism m) {
  switch (m) {
    case LimitMechanism::kCgroup2:
      return "cgroup2";
    case LimitMechanism::kCgroup1:
      return "cgroup1";
    case LimitMechanism::kRlimit:
      return "rlimit";
  }
  return "rlimit";
}

// --- ExecGroup ---------------------------------------------------------

GroupCounters ExecGroup::Read() const {
  GroupCounters c;
  if (!memory_dir_.empty()) {
    std::string file =
        mechanism_ == LimitMechanism::kCgroup2 ? "/memory.events" : "/memory.oom_control";
    c.oom_kills = FlatKeyedValue(ReadSmall(memory_dir_ + file), "oom_kill").value_or(0);
  }
  if (!pids_dir_.empty()) {
    c.pids_max_hits = FlatKeyedValue(ReadSmall(pids_dir_ + "/pids.events"), "max").value_or(0);
  }
  if (!cpu_usage_file_.empty()) {
    std::string text = ReadSmall(cpu_usage_file_);
    if (mechanism_ == LimitMechanism::kCgroup2) {
      std::optional<long long> us = FlatKeyedValue(text, "usage_usec");
      if (us) c.cpu_usage_ns = *us * 1000;
    } else if (!text.empty()) {
      c.cpu_usage_ns = std::atoll(text.c_str());
    }
  }
  return c;
}

bool ExecGroup::Empty() const {
  for (const std::string& dir : dirs_) {
    if (!ListProcs(dir).empty()) return false;
  }
  return true;
}

int ExecGroup::KillAll() const {
  if (dirs_.empty()) return 0;
  const std::string& dir = dirs_.front();  // every hierarchy lists every process
  if (mechanism_ == LimitMechanism::kCgroup2 && WriteText(dir + "/cgroup.kill", "1").ok()) {
    return static_cast<int>(ListProcs(dir).size());
  }
  int signalled = 0;
  for (int round = 0; round < kKillRounds; ++round) {
    std::vector<pid_t> pids = ListProcs(dir);
    if (pids.empty()) break;
    for (pid_t pid : pids) {
      if (::kill(pid, SIGKILL) == 0) ++signalled;
    }
  }
  return signalled;
}

bool ExecGroup::TryRemove() {
  procs_fds_.clear();
  std::vector<std::string> left;
  for (const std::string& dir : dirs_) {
    if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) left.push_back(dir);
  }
  dirs_ = std::move(left);
  return dirs_.empty();
}

GroupPaths ExecGroup::paths() const {
  return GroupPaths{std::string(LimitMechanismName(mechanism_)), dirs_, memory_dir_, pids_dir_,
                    cpu_usage_file_};
}

// --- Limiter -------------------------------------------------------------

Limiter::~Limiter() = default;

Status Limiter::Open(std::string_view mode) {
  if (mode != "auto" && mode != "cgroup2" && mode != "cgroup1" && mode != "rlimit") {
    return Status::InvalidRequest("--limits must be auto, cgroup2, cgroup1 or rlimit")
        .With("flag", "limits");
  }
  mechanism_ = LimitMechanism::kRlimit;
  if (mode == "rlimit") {
    fallback_reason_ = "rlimits were asked for";
    return Status::Ok();
  }
  std::string reasons;
  if (mode == "auto" || mode == "cgroup2") {
    Status v2 = OpenV2();
    if (v2.ok()) return Status::Ok();
    if (mode == "cgroup2") return v2;
    reasons = "cgroup2: " + v2.message();
  }
  Status v1 = OpenV1();
  if (v1.ok()) {
    fallback_reason_ = reasons;
    return Status::Ok();
  }
  if (mode == "cgroup1") return v1;
  fallback_reason_ = reasons + "; cgroup1: " + v1.message();
  hierarchies_.clear();
  mechanism_ = LimitMechanism::kRlimit;
  return Status::Ok();
}

Status Limiter::OpenV2() {
  std::string mountinfo = ReadSmall("/proc/self/mountinfo");
  std::string mount;
  for (const CgroupMount& m : ParseCgroupMounts(mountinfo)) {
    if (m.v2 && mount.empty()) mount = m.mount_point;
  }
  if (mount.empty()) return Status::Error(ErrorCode::kLimitUnsupported, "no cgroup2 mount");
  std::string own;
  for (const ProcCgroup& c : ParseProcCgroup(ReadSmall("/proc/self/cgroup"))) {
    if (c.hierarchy == 0 && c.controllers.empty()) own = c.path;
  }
  if (own.empty()) return Status::Error(ErrorCode::kLimitUnsupported, "no cgroup2 membership");
  // After an upgrade in place this PID may sit in the leaf it moved itself
  // into below (same PID, same name): its base is the leaf's parent, as
  // before, so the exec groups handed over stay where this binary looks.
  std::string leaf_name = "/" + ParentName() + "-daemon";
  bool in_own_leaf = own.size() > leaf_name.size() && own.ends_with(leaf_name);
  if (in_own_leaf) own = own.substr(0, own.size() - leaf_name.size());
  if (own.empty()) own = "/";
  std::string base = JoinPath(mount, own);
  std::string controllers = " " + ReadSmall(base + "/cgroup.controllers");
  for (const char* need : {"memory", "pids"}) {
    if (controllers.find(std::string(" ") + need) == std::string::npos) {
      return Status::Error(ErrorCode::kLimitUnsupported,
                           std::string("the ") + need + " controller is not available in " + base);
    }
  }
  bool has_cpu = controllers.find(" cpu") != std::string::npos;
  std::string enable = has_cpu ? "+memory +pids +cpu" : "+memory +pids";
  std::string parent = base + "/" + ParentName();
  RemoveStale(base);
  if (own != "/") {
    // A non-root cgroup with enabled controllers may hold no processes:
    // move the daemon into a leaf of its own first.
    if (in_own_leaf) moved_from_ = base + "/cgroup.procs";
    Status s = WriteText(base + "/cgroup.subtree_control", enable);
    if (!s.ok()) {
      AGENTD_RETURN_IF_ERROR(MakeDir(parent));
      std::string leaf = parent + "-daemon";
      AGENTD_RETURN_IF_ERROR(MakeDir(leaf));
      AGENTD_RETURN_IF_ERROR(WriteText(leaf + "/cgroup.procs", "0"));
      moved_from_ = base + "/cgroup.procs";
      s = WriteText(base + "/cgroup.subtree_control", enable);
      if (!s.ok()) {
        (void)WriteText(moved_from_, "0");
        moved_from_.clear();
        ::rmdir(leaf.c_str());
        ::rmdir(parent.c_str());
        return s;
      }
    }
  } else {
    AGENTD_RETURN_IF_ERROR(WriteText(base + "/cgroup.subtree_control", enable));
  }
  AGENTD_RETURN_IF_ERROR(MakeDir(parent));
  AGENTD_RETURN_IF_ERROR(WriteText(parent + "/cgroup.subtree_control", enable));
  hierarchies_ = {Hierarchy{"unified", parent}};
  cpu_accounting_ = true;  // cpu.stat usage_usec exists without the cpu controller
  cpu_bandwidth_ = has_cpu;
  mechanism_ = LimitMechanism::kCgroup2;
  return Status::Ok();
}

Status Limiter::OpenV1() {
  std::vector<CgroupMount> mounts = ParseCgroupMounts(ReadSmall("/proc/self/mountinfo"));
  std::vector<ProcCgroup> own = ParseProcCgroup(ReadSmall("/proc/self/cgroup"));
  std::vector<Hierarchy> found;
  for (const char* name : {"memory", "pids", "cpu", "cpuacct"}) {
    const CgroupMount* mount = nullptr;
    for (const CgroupMount& m : mounts) {
      if (!m.v2 && Contains(m.controllers, name)) mount = &m;
    }
    std::string path;
    for (const ProcCgroup& c : own) {
      if (Contains(c.controllers, name)) path = c.path;
    }
    if (!mount || path.empty()) continue;
    // The mount shows the hierarchy from mount->root down.
    std::string rel = path;
    if (mount->root != "/" && rel.starts_with(mount->root)) rel = rel.substr(mount->root.size());
    std::string base = JoinPath(mount->mount_point, rel);
    if (!IsDir(base)) continue;
    RemoveStale(base);
    std::string parent = base + "/" + ParentName();
    if (!MakeDir(parent).ok()) continue;
    found.push_back(Hierarchy{name, parent});
  }
  hierarchies_ = std::move(found);
  if (!Find("memory") || !Find("pids")) {
    for (const Hierarchy& h : hierarchies_) ::rmdir(h.parent.c_str());
    hierarchies_.clear();
    return Status::Error(ErrorCode::kLimitUnsupported,
                         "the memory and pids hierarchies are not both mounted and writable");
  }
  const Hierarchy* cpu = Find("cpu");
  cpu_bandwidth_ =
      cpu && IsDir(cpu->parent) && ::access((cpu->parent + "/cpu.cfs_quota_us").c_str(), W_OK) == 0;
  const Hierarchy* acct = Find("cpuacct");
  cpu_accounting_ = acct && ::access((acct->parent + "/cpuacct.usage").c_str(), R_OK) == 0;
  mechanism_ = LimitMechanism::kCgroup1;
  return Status::Ok();
}

void Limiter::Close() {
  Sweep();
  for (const Hierarchy& h : hierarchies_) ::rmdir(h.parent.c_str());
  if (!moved_from_.empty()) {
    (void)WriteText(moved_from_, "0");
    ::rmdir((hierarchies_.front().parent + "-daemon").c_str());
    ::rmdir(hierarchies_.front().parent.c_str());
  }
}

const Limiter::Hierarchy* Limiter::Find(std::string_view name) const {
  for (const Hierarchy& h : hierarchies_) {
    if (h.name == name) return &h;
  }
  return nullptr;
}

std::vector<std::string> Limiter::Supported() const {
  std::vector<std::string> out = {"timeout", "memory", "pids", "cpu", "file_size", "output"};
  if (cpu_bandwidth_ && mechanism_ != LimitMechanism::kRlimit) out.push_back("cpus");
  return out;
}

Status Limiter::Check(const ExecLimits& l, bool runs_as_root) const {
  auto refuse = [this](std::string field, std::string why) {
    return Status::Error(ErrorCode::kLimitUnsupported, why)
        .With("field", std::move(field))
        .With("mechanism", std::string(mechanism_name()));
  };
  if (l.cpus && (mechanism_ == LimitMechanism::kRlimit || !cpu_bandwidth_)) {
    return refuse("cpus", "a CPU bandwidth limit (cpus) needs a cgroup cpu controller");
  }
  if (l.pids && mechanism_ == LimitMechanism::kRlimit && runs_as_root) {
    return refuse("pids",
                  "without cgroups a process limit is RLIMIT_NPROC, which the kernel does not "
                  "enforce for root; run the exec as another user");
  }
  return Status::Ok();
}

bool Limiter::NeedsGroup(const ExecLimits& l) const {
  if (mechanism_ == LimitMechanism::kRlimit) return false;
  return l.memory_mb || l.pids || (l.cpu_sec && cpu_accounting_) || l.cpus;
}

Result<std::unique_ptr<ExecGroup>> Limiter::CreateGroup(uint64_t seq, const ExecLimits& l,
                                                        const std::string& v2_parent) const {
  auto g = std::make_unique<ExecGroup>();
  g->mechanism_ = mechanism_;
  std::string name = "/e" + std::to_string(seq);
  auto made = [&](const Hierarchy& h) -> Result<std::string> {
    bool nested = mechanism_ == LimitMechanism::kCgroup2 && !v2_parent.empty();
    std::string dir = (nested ? v2_parent : h.parent) + name;
    if (::mkdir(dir.c_str(), 0755) != 0) return PosixError(errno, "cannot create cgroup", dir);
    g->dirs_.push_back(dir);
    return dir;
  };
  auto fail = [&](Status s) {
    g->TryRemove();
    return s;
  };
  if (mechanism_ == LimitMechanism::kCgroup2) {
    Result<std::string> dir = made(hierarchies_.front());
    if (!dir.ok()) return dir.status();
    g->memory_dir_ = g->pids_dir_ = *dir;
    g->cpu_usage_file_ = *dir + "/cpu.stat";
    if (l.memory_mb) {
      long long bytes = *l.memory_mb << 20;
      Status s = WriteText(*dir + "/memory.max", std::to_string(bytes));
      if (!s.ok()) return fail(s);
      (void)WriteText(*dir + "/memory.swap.max", "0");
      (void)WriteText(*dir + "/memory.oom.group", "1");
    }
    if (l.pids) {
      Status s = WriteText(*dir + "/pids.max", std::to_string(*l.pids));
      if (!s.ok()) return fail(s);
    }
    if (l.cpus) {
      long long quota = std::llround(*l.cpus * kCpuPeriodUs);
      Status s =
          WriteText(*dir + "/cpu.max", std::to_string(quota) + " " + std::to_string(kCpuPeriodUs));
      if (!s.ok()) return fail(s);
    }
  } else {
    // The memory and pids groups always (they list the processes for
    // KillAll and count OOM kills), cpu and cpuacct when asked for.
    for (const Hierarchy& h : hierarchies_) {
      bool want = h.name == "memory" || h.name == "pids" ||
                  (h.name == "cpuacct" && l.cpu_sec && cpu_accounting_) ||
                  (h.name == "cpu" && l.cpus);
      if (!want) continue;
      Result<std::string> dir = made(h);
      if (!dir.ok()) return fail(dir.status());
      Status s = Status::Ok();
      if (h.name == "memory") {
        g->memory_dir_ = *dir;
        if (l.memory_mb) {
          std::string bytes = std::to_string(*l.memory_mb << 20);
          s = WriteText(*dir + "/memory.limit_in_bytes", bytes);
          if (s.ok()) (void)WriteText(*dir + "/memory.memsw.limit_in_bytes", bytes);
        }
      } else if (h.name == "pids") {
        g->pids_dir_ = *dir;
        if (l.pids) s = WriteText(*dir + "/pids.max", std::to_string(*l.pids));
      } else if (h.name == "cpuacct") {
        g->cpu_usage_file_ = *dir + "/cpuacct.usage";
      } else if (h.name == "cpu") {
        s = WriteText(*dir + "/cpu.cfs_period_us", std::to_string(kCpuPeriodUs));
        if (s.ok()) {
          s = WriteText(*dir + "/cpu.cfs_quota_us",
                        std::to_string(std::llround(*l.cpus * kCpuPeriodUs)));
        }
      }
      if (!s.ok()) return fail(s);
    }
  }
  for (const std::string& dir : g->dirs_) {
    std::string procs = dir + "/cgroup.procs";
    UniqueFd fd(::open(procs.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) return fail(PosixError(errno, "cannot open", procs));
    g->procs_fds_.push_back(std::move(fd));
  }
  return g;
}

Result<std::unique_ptr<ExecGroup>> Limiter::AdoptGroup(const GroupPaths& paths) const {
  auto refuse = [](std::string why) {
    return Status::Error(ErrorCode::kLimitUnsupported,
                         "cannot take the exec's cgroup over: " + why);
  };
  if (mechanism_ == LimitMechanism::kRlimit || paths.mechanism != mechanism_name()) {
    return refuse("it is " + paths.mechanism + ", this daemon limits by " +
                  std::string(mechanism_name()));
  }
  if (paths.dirs.empty()) return refuse("it names no directory");
  auto listed = [&paths](const std::string& dir) {
    return dir.empty() || Contains(paths.dirs, dir);
  };
  if (!listed(paths.memory_dir) || !listed(paths.pids_dir)) {
    return refuse("its memory or pids directory is not one of its directories");
  }
  for (const std::string& dir : paths.dirs) {
    // A group, not any directory: cgroupfs has cgroup.procs in each.
    if (!dir.starts_with("/") || dir.find("/../") != std::string::npos ||
        ::access((dir + "/cgroup.procs").c_str(), F_OK) != 0) {
      return refuse(dir + " is not a cgroup (any more)");
    }
  }
  auto g = std::make_unique<ExecGroup>();
  g->mechanism_ = mechanism_;
  g->dirs_ = paths.dirs;
  g->memory_dir_ = paths.memory_dir;
  g->pids_dir_ = paths.pids_dir;
  g->cpu_usage_file_ = paths.cpu_usage_file;
  return g;
}

std::vector<ChildRlimit> Limiter::Rlimits(const ExecLimits& l) const {
  std::vector<ChildRlimit> out;
  if (l.file_size_mb) {
    out.push_back({RLIMIT_FSIZE, static_cast<rlim_t>(*l.file_size_mb) << 20});
  }
  if (mechanism_ == LimitMechanism::kRlimit) {
    if (l.memory_mb) out.push_back({RLIMIT_AS, static_cast<rlim_t>(*l.memory_mb) << 20});
    if (l.pids) out.push_back({RLIMIT_NPROC, static_cast<rlim_t>(*l.pids)});
  }
  if (l.cpu_sec && (mechanism_ == LimitMechanism::kRlimit || !cpu_accounting_)) {
    out.push_back({RLIMIT_CPU, static_cast<rlim_t>(*l.cpu_sec)});
  }
  return out;
}

void Limiter::Linger(std::unique_ptr<ExecGroup> group) {
  std::lock_guard<std::mutex> lock(mu_);
  lingering_.push_back(std::move(group));
}

void Limiter::Sweep() {
  std::vector<std::unique_ptr<ExecGroup>> groups;
  {
    std::lock_guard<std::mutex> lock(mu_);
    groups.swap(lingering_);
  }
  std::vector<std::unique_ptr<ExecGroup>> left;
  for (auto& g : groups) {
    if (!g->TryRemove()) left.push_back(std::move(g));
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& g : left) lingering_.push_back(std::move(g));
}

size_t Limiter::lingering() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lingering_.size();
}

}  // namespace agentd
