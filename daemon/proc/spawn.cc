#include "proc/spawn.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "agentd/trees/posix_error.h"
#include "proc/child_env.h"
#include "proc/child_side.h"
#include "proc/empty_network.h"
#include "proc/exec_holder.h"
#include "proc/raw_syscall.h"
#include "proc/readonly_mounts.h"
#include "proc/scratch_mount.h"
#include "sys/thread_sanitizer.h"

namespace agentd {

CloneFn LibcClone() {
#ifdef AGENTD_THREAD_SANITIZER
  static const CloneFn next = reinterpret_cast<CloneFn>(::dlsym(RTLD_NEXT, "clone"));
  return next;
#else
  return &::clone;
#endif
}

namespace {

constexpr size_t kChildStackBytes = 64 * 1024;

// The kernel's struct sigaction (not libc's): handler, flags, restorer, mask.
struct KernelSigaction {
  void (*handler)(int);
  unsigned long flags;
  void (*restorer)();
  unsigned long mask;
};

enum class Step : int {
  kNone,
  kSetsid,
  kCgroup,
  kCgroupNamespace,
  kRlimit,
  kDup,
  kTty,
  kGroups,
  kGid,
  kUid,
  kChdir,
  kNetwork,
  kReadonly,
  kScratch,
  kBounding,
  kCapabilities,
  kNoNewPrivs,
  kSeccomp,
  kExec
};

// Everything the child needs, prepared by the parent. The child writes
// only `err`, `step` and `failed_path` (the parent is suspended meanwhile).
struct ChildArgs {
  char* const* argv;
  char* const* envp;
  const char* const* candidates;
  size_t candidate_count;
  const char* cwd;
  const Credentials* creds;
  const gid_t* groups;
  size_t group_count;
  int fds[3];
  int fd3;  // -1: none
  const struct rlimit* nofile;
  bool controlling_terminal;
  const int* cgroup_fds;
  size_t cgroup_fd_count;
  const std::pair<int, rlim_t>* rlimits;
  size_t rlimit_count;
  bool set_oom_score_adj;
  char oom_score_adj[16];  // decimal text
  size_t oom_score_adj_len;
  bool restricted;
  const struct sock_fprog* seccomp_filter;
  const char* const* readonly_paths;
  size_t readonly_path_count;
  bool empty_network;
  const char* scratch_path;  // nullptr: none
  int scratch_mount_fd;
  bool egress_policed;
  int err;
  Step step;
  const char* failed_path;
};

[[noreturn]] AGENTD_CHILD_SIDE void Fail(ChildArgs* a, Step step, int err,
                                         const char* path = nullptr) {
  a->err = err;
  a->step = step;
  a->failed_path = path;
  // The raw system call, not _exit: a sanitizer's _exit hook (leak checks)
  // must not run in a child that shares the parent's memory.
  ::syscall(SYS_exit_group, SpawnFailureExitCode(err));
  __builtin_unreachable();
}

// execvpe's rules: keep going past "not here" errors, remember EACCES,
// stop at anything else.
[[noreturn]] AGENTD_CHILD_SIDE void ExecCandidates(ChildArgs* a) {
  bool saw_eacces = false;
  const char* eacces_path = nullptr;
  for (size_t i = 0; i < a->candidate_count; ++i) {
    ::syscall(SYS_execve, a->candidates[i], a->argv, a->envp);
    int err = errno;
    switch (err) {
      case EACCES:
        if (!saw_eacces) eacces_path = a->candidates[i];
        saw_eacces = true;
        break;
      case ENOENT:
      case ENOTDIR:
      case ESTALE:
      case ENODEV:
      case ETIMEDOUT:
        break;
      default:
        Fail(a, Step::kExec, err, a->candidates[i]);
    }
  }
  if (saw_eacces) Fail(a, Step::kExec, EACCES, eacces_path);
  Fail(a, Step::kExec, ENOENT, a->argv[0]);
}

AGENTD_CHILD_SIDE int ChildMain(void* arg) {
  auto* a = static_cast<ChildArgs*>(arg);
  KernelSigaction dfl{SIG_DFL, 0, nullptr, 0};
  for (int s = 1; s < NSIG; ++s) {
    ::syscall(SYS_rt_sigaction, s, &dfl, nullptr, sizeof(dfl.mask));  // EINVAL for KILL/STOP
  }
  unsigned long none = 0;
  ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, nullptr, sizeof(none));
  if (::syscall(SYS_setsid) < 0) Fail(a, Step::kSetsid, errno);
  for (size_t i = 0; i < a->cgroup_fd_count; ++i) {
    if (::syscall(SYS_write, a->cgroup_fds[i], "0", 1) != 1) Fail(a, Step::kCgroup, errno);
  }
  // Rooted at the cgroups just joined: a process can move only within its
  // namespace's root, so not out of the one its egress programs hang on.
  if (a->egress_policed && ::syscall(SYS_unshare, CLONE_NEWCGROUP) != 0) {
    Fail(a, Step::kCgroupNamespace, errno);
  }
  if (a->set_oom_score_adj) {
    int fd = static_cast<int>(
        ::syscall(SYS_openat, AT_FDCWD, "/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC));
    if (fd >= 0) {  // best effort: an image without /proc keeps the daemon's value
      ::syscall(SYS_write, fd, a->oom_score_adj, a->oom_score_adj_len);
      ::syscall(SYS_close, fd);
    }
  }
  for (size_t i = 0; i < a->rlimit_count; ++i) {
    // RLIMIT_CPU: the hard limit one second later, so SIGXCPU comes first.
    rlim_t hard = a->rlimits[i].second + (a->rlimits[i].first == RLIMIT_CPU ? 1 : 0);
    struct rlimit want = {a->rlimits[i].second, hard};
    if (::syscall(SYS_prlimit64, 0, a->rlimits[i].first, &want, nullptr) == 0) continue;
    struct rlimit now;
    if (::syscall(SYS_prlimit64, 0, a->rlimits[i].first, nullptr, &now) != 0) {
      Fail(a, Step::kRlimit, errno);
    }
    want.rlim_max = now.rlim_max;
    if (want.rlim_cur > now.rlim_max) want.rlim_cur = now.rlim_max;
    if (::syscall(SYS_prlimit64, 0, a->rlimits[i].first, &want, nullptr) != 0) {
      Fail(a, Step::kRlimit, errno);
    }
  }
  for (int i = 0; i < 3; ++i) {
    if (::syscall(SYS_dup3, a->fds[i], i, 0) < 0 && errno != EINVAL) Fail(a, Step::kDup, errno);
    if (a->fds[i] == i) ::syscall(SYS_fcntl, i, F_SETFD, 0);  // dup3 refuses the same fd
  }
  if (a->fd3 >= 0) {
    // After 0-2 are in place, so a daemon descriptor numbered 3 that one of
    // them came from is no longer needed.
    if (::syscall(SYS_dup3, a->fd3, 3, 0) < 0 && errno != EINVAL) Fail(a, Step::kDup, errno);
    if (a->fd3 == 3) ::syscall(SYS_fcntl, 3, F_SETFD, 0);
  }
  if (a->controlling_terminal && ::syscall(SYS_ioctl, 0, TIOCSCTTY, 0) != 0) {
    Fail(a, Step::kTty, errno);
  }
  if (a->empty_network) {
    int err = EnterEmptyNetwork();
    if (err != 0) Fail(a, Step::kNetwork, err);
  }
  if (a->readonly_path_count > 0) {
    // While the capability to mount is still there.
    const char* failed = nullptr;
    int err = ApplyReadonlyMounts(a->readonly_paths, a->readonly_path_count, &failed);
    if (err != 0) Fail(a, Step::kReadonly, err, failed);
  }
  if (a->scratch_path) {
    int err = MountScratch(a->scratch_path, a->scratch_mount_fd, a->readonly_path_count > 0);
    if (err != 0) Fail(a, Step::kScratch, err, a->scratch_path);
  }
  if (a->egress_policed && !a->restricted) {
    // After the namespace and mount steps, which needed CAP_SYS_ADMIN. EINVAL:
    // a kernel that predates the capability (CAP_BPF and CAP_PERFMON: 5.8).
    for (int cap : kEgressDroppedCaps) {
      if (::syscall(SYS_prctl, PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
        Fail(a, Step::kBounding, errno);
      }
    }
    if (::syscall(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 &&
        errno != EINVAL) {
      Fail(a, Step::kCapabilities, errno);
    }
  }
  if (a->restricted) {
    // While still root: nothing exec'd later can regain a dropped bounding
    // capability, whatever file capabilities or setuid bits it meets.
    for (unsigned long cap = 0; cap < 64; ++cap) {
      long has = ::syscall(SYS_prctl, PR_CAPBSET_READ, cap, 0, 0, 0);
      if (has < 0) break;  // EINVAL: past the kernel's last capability
      if (has == 1 && ::syscall(SYS_prctl, PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
        Fail(a, Step::kBounding, errno);
      }
    }
    // EINVAL: a kernel before 4.3 has no ambient set to clear.
    if (::syscall(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 &&
        errno != EINVAL) {
      Fail(a, Step::kCapabilities, errno);
    }
  }
  if (a->creds) {
    if (::syscall(SYS_setgroups, a->group_count, a->groups) != 0) Fail(a, Step::kGroups, errno);
    gid_t g = a->creds->gid;
    if (::syscall(SYS_setresgid, g, g, g) != 0) Fail(a, Step::kGid, errno);
    if (a->creds->uid) {
      uid_t u = *a->creds->uid;
      if (::syscall(SYS_setresuid, u, u, u) != 0) Fail(a, Step::kUid, errno);
    }
  }
  if (a->restricted) {
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct no_caps[_LINUX_CAPABILITY_U32S_3] = {};
    if (::syscall(SYS_capset, &header, no_caps) != 0) Fail(a, Step::kCapabilities, errno);
    if (::syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
      Fail(a, Step::kNoNewPrivs, errno);
    }
  }
  if (a->cwd && ::syscall(SYS_chdir, a->cwd) != 0) Fail(a, Step::kChdir, errno, a->cwd);
  if (a->nofile) ::syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, a->nofile, nullptr);
  unsigned first_closed = a->fd3 >= 0 ? 4U : 3U;
  if (::syscall(SYS_close_range, first_closed, ~0U, 0U) != 0) {
    // Kernels before 5.9: every daemon descriptor is close-on-exec anyway;
    // close what a plain loop can reach as a second line.
    for (int fd = static_cast<int>(first_closed); fd < 65536; ++fd) ::syscall(SYS_close, fd);
  }
  // Last: from here on the refused calls answer EPERM (execve is allowed).
  if (a->seccomp_filter &&
      ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, a->seccomp_filter) != 0) {
    Fail(a, Step::kSeccomp, errno);
  }
  ExecCandidates(a);
}

// A holder's start (proc/exec_holder.h). It shares the daemon's memory and
// runs beside it: until it sets `ready` the daemon waits (so it may use `h`
// and libc's syscall() as a vfork child does); after that, only its copies.
struct HeldArgs {
  CloneFn clone;  // LibcClone(), resolved by the daemon (TSan: a dlsym)
  ChildArgs* child;
  char* child_stack_top;
  HolderFds fds;  // socket_path: the directory, with a trailing '/'
  pid_t command;
  int listen_error;
  int ready;
};

// Binds and listens on `path`; -1 with *err set (and path emptied) if not.
AGENTD_CHILD_SIDE int Listen(char* path, int* err) {
  int fd = static_cast<int>(::syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd >= 0) {
    struct sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    for (size_t i = 0; path[i] && i + 1 < sizeof(addr.sun_path); ++i) addr.sun_path[i] = path[i];
    ::syscall(SYS_unlinkat, AT_FDCWD, path, 0);  // a stale one from an earlier boot
    if (::syscall(SYS_bind, fd, &addr, sizeof(addr)) == 0 && ::syscall(SYS_listen, fd, 4) == 0) {
      return fd;
    }
  }
  *err = errno;
  if (fd >= 0) ::syscall(SYS_close, fd);
  path[0] = '\0';
  return -1;
}

AGENTD_CHILD_SIDE int HolderMain(void* arg) {
  auto* h = static_cast<HeldArgs*>(arg);
  pid_t c = h->clone(ChildMain, h->child_stack_top, CLONE_VM | CLONE_VFORK | SIGCHLD, h->child);
  if (c < 0 && h->child->err == 0) {
    h->child->err = errno;
    h->child->step = Step::kNone;
  }
  h->command = c;
  if (h->child->err != 0) {
    // The child is in _exit() already: reap it, pass its code on.
    int status = 0;
    if (c > 0) ::syscall(SYS_wait4, c, &status, __WALL, nullptr);
    int code = SpawnFailureExitCode(h->child->err);
    HolderWake(&h->ready);
    ::syscall(SYS_exit_group, code);
  }
  HolderFds fds = h->fds;
  size_t len = 0;
  while (fds.socket_path[len]) ++len;
  char digits[16];
  int nd = 0;
  for (unsigned v = static_cast<unsigned>(c); v > 0 || nd == 0; v /= 10)
    digits[nd++] = '0' + v % 10;
  const char suffix[] = ".sock";
  if (len + nd + sizeof(suffix) <= sizeof(fds.socket_path)) {
    while (nd > 0) fds.socket_path[len++] = digits[--nd];
    for (char ch : suffix) fds.socket_path[len++] = ch;
    fds.listen = Listen(fds.socket_path, &h->listen_error);
  } else {
    h->listen_error = ENAMETOOLONG;
    fds.socket_path[0] = '\0';
  }
  fds.command = c;
  HolderWake(&h->ready);
  RunHolder(fds);
}

// The paths execve is tried on, in order.
std::vector<std::string> Candidates(const std::vector<std::string>& argv,
                                    const std::vector<std::string>& env) {
  const std::string& name = argv[0];
  if (name.find('/') != std::string::npos) return {name};
  std::string path;
  if (!FindEnv(env, "PATH", &path)) path = kDefaultPath;
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t end = path.find(':', start);
    std::string dir = path.substr(start, end == std::string::npos ? end : end - start);
    if (dir.empty()) dir = ".";
    out.push_back(dir + "/" + name);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::vector<char*> CStrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const std::string& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

std::string Describe(Step step, int err, const char* path, const SpawnSpec& spec) {
  std::string what;
  switch (step) {
    case Step::kExec:
      what = "cannot execute " + std::string(path ? path : spec.argv[0].c_str());
      break;
    case Step::kChdir:
      what = "cannot change directory to " + spec.cwd.value_or("");
      break;
    case Step::kSetsid:
      what = "cannot start a session";
      break;
    case Step::kCgroup:
      what = "cannot join the exec's cgroup";
      break;
    case Step::kCgroupNamespace:
      what = "cannot enter a cgroup namespace";
      break;
    case Step::kRlimit:
      what = "cannot set a resource limit";
      break;
    case Step::kDup:
      what = "cannot set up standard descriptors";
      break;
    case Step::kTty:
      what = "cannot acquire the PTY as controlling terminal";
      break;
    case Step::kGroups:
      what = "cannot set supplementary groups";
      break;
    case Step::kGid:
      what = "cannot switch to group " + std::to_string(spec.credentials->gid);
      break;
    case Step::kUid:
      what = "cannot switch to user " + std::to_string(*spec.credentials->uid);
      break;
    case Step::kNetwork:
      what = "cannot give the exec an empty network";
      break;
    case Step::kReadonly:
      what = path ? "cannot bind " + std::string(path) + " read-only"
                  : std::string("cannot create the exec's mount namespace");
      break;
    case Step::kScratch:
      what = "cannot mount the exec's scratch tmpfs at " + std::string(path ? path : "?");
      break;
    case Step::kBounding:
      what = "cannot drop the capability bounding set";
      break;
    case Step::kCapabilities:
      what = "cannot drop the process's capabilities";
      break;
    case Step::kNoNewPrivs:
      what = "cannot set no_new_privs";
      break;
    case Step::kSeccomp:
      what = "cannot load the seccomp filter";
      break;
    case Step::kNone:
      what = "cannot start the process";
      break;
  }
  return what + ": " + std::strerror(err);
}

}  // namespace

const int kEgressDroppedCaps[8] = {CAP_NET_ADMIN, CAP_NET_RAW,    CAP_SYS_ADMIN,  CAP_PERFMON,
                                   CAP_BPF,       CAP_SYS_MODULE, CAP_SYS_PTRACE, CAP_SYS_RAWIO};

void FreeHolderStack(void* stack) {
  if (stack) ::munmap(stack, 2 * kChildStackBytes);
}

int SpawnFailureExitCode(int err) { return (err == ENOENT || err == ENOTDIR) ? 127 : 126; }

Result<SpawnResult> Spawn(const SpawnSpec& spec) {
  std::vector<std::string> candidates = Candidates(spec.argv, spec.env);
  std::vector<const char*> candidate_ptrs;
  for (const std::string& c : candidates) candidate_ptrs.push_back(c.c_str());
  std::vector<char*> argv = CStrings(spec.argv);
  std::vector<char*> envp = CStrings(spec.env);
  ChildArgs args{};
  args.argv = argv.data();
  args.envp = envp.data();
  args.candidates = candidate_ptrs.data();
  args.candidate_count = candidate_ptrs.size();
  args.cwd = spec.cwd ? spec.cwd->c_str() : nullptr;
  args.creds = spec.credentials;
  if (spec.credentials) {
    args.groups = spec.credentials->groups.data();
    args.group_count = spec.credentials->groups.size();
  }
  args.fds[0] = spec.stdin_fd;
  args.fds[1] = spec.stdout_fd;
  args.fds[2] = spec.stderr_fd;
  args.fd3 = spec.fd3;
  args.nofile = spec.nofile ? &*spec.nofile : nullptr;
  args.controlling_terminal = spec.controlling_terminal;
  args.cgroup_fds = spec.cgroup_procs_fds.data();
  args.cgroup_fd_count = spec.cgroup_procs_fds.size();
  args.rlimits = spec.rlimits.data();
  args.rlimit_count = spec.rlimits.size();
  if (spec.oom_score_adj) {
    std::string text = std::to_string(*spec.oom_score_adj);
    args.set_oom_score_adj = true;
    args.oom_score_adj_len = std::min(text.size(), sizeof(args.oom_score_adj));
    std::memcpy(args.oom_score_adj, text.data(), args.oom_score_adj_len);
  }

  args.restricted = spec.restricted;
  args.seccomp_filter = spec.seccomp_filter;
  std::vector<const char*> readonly_ptrs;
  for (const std::string& p : spec.readonly_paths) readonly_ptrs.push_back(p.c_str());
  args.readonly_paths = readonly_ptrs.data();
  args.readonly_path_count = readonly_ptrs.size();
  args.empty_network = spec.empty_network;
  args.scratch_path = spec.scratch_path.empty() ? nullptr : spec.scratch_path.c_str();
  args.scratch_mount_fd = spec.scratch_mount_fd;
  args.egress_policed = spec.egress_policed;

  // Under a holder: its stack above the child's, in one mapping.
  size_t stack_bytes = kChildStackBytes * (spec.holder ? 2 : 1);
  void* stack = ::mmap(nullptr, stack_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return PosixError(errno, "cannot map a child stack");
  HeldArgs held{};
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid;
  if (spec.holder) {
    held.clone = LibcClone();
    held.child = &args;
    held.child_stack_top = static_cast<char*>(stack) + kChildStackBytes;
    held.fds.conn = spec.holder->conn;
    held.fds.out = spec.holder->out;
    held.fds.err = spec.holder->err;
    held.fds.in = spec.holder->in;
    held.fds.in_relay = spec.holder->in_relay;
    held.fds.in_keep = spec.holder->in_keep;
    held.fds.in_data = spec.holder->in_data;
    held.fds.in_size = spec.holder->in_size;
    held.fds.pty = spec.holder->pty;
    held.fds.pty_out = spec.holder->pty_out;
    held.fds.channel = spec.holder->channel;
    held.fds.scratch = spec.scratch_mount_fd;  // the holder's copy of the table has it too
    std::string dir = spec.holder->socket_dir + "/";
    std::memcpy(held.fds.socket_path, dir.data(),
                std::min(dir.size(), sizeof(held.fds.socket_path) - 1));
    pid =
        LibcClone()(HolderMain, static_cast<char*>(stack) + stack_bytes, CLONE_VM | SIGCHLD, &held);
  } else {
    pid = LibcClone()(ChildMain, static_cast<char*>(stack) + kChildStackBytes,
                      CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
  }
  int clone_errno = errno;
  while (pid > 0 && spec.holder && __atomic_load_n(&held.ready, __ATOMIC_ACQUIRE) == 0) {
    struct timespec second = {1, 0};
    ::syscall(SYS_futex, &held.ready, FUTEX_WAIT, 0, &second);
    siginfo_t si{};
    if (__atomic_load_n(&held.ready, __ATOMIC_ACQUIRE) == 0 &&
        ::waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        si.si_pid == pid) {
      args.err = args.err != 0 ? args.err : ECHILD;  // the holder died before it said
      break;
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!spec.holder || pid < 0) ::munmap(stack, stack_bytes);
  if (pid < 0) return PosixError(clone_errno, "cannot create a process");

  SpawnResult out;
  out.pid = pid;
  if (spec.holder) {
    out.pid = held.command;
    out.holder_pid = pid;
    out.holder_listen_error = held.listen_error;
    out.holder_stack = stack;
  }
  out.error = args.err;
  if (args.err != 0) {
    out.reason = Describe(args.step, args.err, args.failed_path, spec);
    out.exit_code = SpawnFailureExitCode(args.err);
  }
  return out;
}

}  // namespace agentd
