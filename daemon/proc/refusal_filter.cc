#include "proc/refusal_filter.h"

#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agentd/trees/posix_error.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {
namespace {

// The namespace flags clone(2) is refused with; CLONE_NEWTIME shares its
// bit with the exit signal in clone(2) and exists only for unshare/clone3,
// which are refused whole.
constexpr unsigned long kNamespaceFlags[] = {CLONE_NEWNS,    CLONE_NEWUTS, CLONE_NEWIPC,
                                             CLONE_NEWUSER,  CLONE_NEWPID, CLONE_NEWNET,
                                             CLONE_NEWCGROUP};

struct ContextDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};

Status Failed(int rc, const std::string& what) {
  return PosixError(rc < 0 ? -rc : EINVAL, "cannot build the seccomp filter: " + what);
}

}  // namespace

const std::vector<std::string>& RefusedSyscallNames() {
  static const std::vector<std::string> names = {
      // Mounts and the new mount API: a tenant could hide or replace files.
      "mount", "umount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount",
      "fspick", "move_mount", "open_tree", "mount_setattr",
      // Namespaces (clone only with a namespace flag; clone3 answers ENOSYS).
      "unshare", "setns", "clone",
      // Other processes' memory and the kernel's handles on files.
      "ptrace", "process_vm_writev", "open_by_handle_at", "name_to_handle_at",
      // Kernel code and kernel replacement.
      "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
      // In-kernel programs, performance counters, page-fault handlers.
      "bpf", "perf_event_open", "userfaultfd",
      // Keyrings outlive the process and are shared across the user.
      "add_key", "request_key", "keyctl",
      // The machine: reboot, clocks, raw I/O ports, swap, accounting, quotas.
      "reboot", "settimeofday", "stime", "clock_settime", "clock_settime64", "adjtimex",
      "clock_adjtime", "clock_adjtime64", "iopl", "ioperm", "swapon", "swapoff", "acct", "quotactl",
      "quotactl_fd", "syslog", "vhangup", "lookup_dcookie", "uselib", "nfsservctl"};
  return names;
}

bool SeccompFilterSupported(std::string* why) {
  // A null program: EFAULT proves the filter mode exists, EINVAL that the
  // kernel was built without it, ENOSYS that it has no seccomp at all.
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, nullptr) == 0) return true;
  int err = errno;
  if (err == EFAULT) return true;
  if (why) {
    *why = err == ENOSYS ? "this kernel has no seccomp support"
                         : "this kernel cannot load seccomp filters (" +
                               std::string(std::strerror(err)) + ")";
  }
  return false;
}

Result<std::unique_ptr<RefusalFilter>> BuildRefusalFilter() {
  std::unique_ptr<void, ContextDeleter> ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return Failed(-ENOMEM, "seccomp_init");
#if defined(__x86_64__)
  // The 32-bit ABIs the same kernel runs: without them a tenant would make
  // the refused calls through int 0x80 or the x32 numbers.
  for (uint32_t arch : {SCMP_ARCH_X86, SCMP_ARCH_X32}) {
    int rc = seccomp_arch_add(ctx.get(), arch);
    if (rc != 0 && rc != -EEXIST) return Failed(rc, "seccomp_arch_add");
  }
#elif defined(__aarch64__)
  if (int rc = seccomp_arch_add(ctx.get(), SCMP_ARCH_ARM); rc != 0 && rc != -EEXIST) {
    return Failed(rc, "seccomp_arch_add");
  }
#endif
  // A call from an architecture the filter does not know is refused too.
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(EPERM));
      rc != 0) {
    return Failed(rc, "the bad-architecture action");
  }
  auto filter = std::make_unique<RefusalFilter>();
  for (const std::string& name : RefusedSyscallNames()) {
    int nr = seccomp_syscall_resolve_name(name.c_str());
    if (nr == __NR_SCMP_ERROR) continue;  // unknown to this libseccomp
    int rc;
    if (name == "clone") {
      for (unsigned long flag : kNamespaceFlags) {
        rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), nr, 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
        if (rc != 0) return Failed(rc, "the rule for clone");
      }
    } else {
      rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), nr, 0);
      // A pseudo number: the call exists on none of the filter's ABIs.
      if (rc == -EDOM || rc == -EINVAL) continue;
      if (rc != 0) return Failed(rc, "the rule for " + name);
    }
    if (seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, name.c_str()) >= 0) {
      filter->refused.push_back(name);
    }
  }
  int clone3 = seccomp_syscall_resolve_name("clone3");
  if (clone3 != __NR_SCMP_ERROR) {
    int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), clone3, 0);
    if (rc != 0 && rc != -EDOM && rc != -EINVAL) return Failed(rc, "the rule for clone3");
  }

  // libseccomp 2.5 exports to a descriptor only: a memfd, read back.
  UniqueFd fd(static_cast<int>(::syscall(SYS_memfd_create, "agentd-seccomp", MFD_CLOEXEC)));
  if (!fd) return PosixError(errno, "cannot create a memfd for the seccomp filter");
  if (int rc = seccomp_export_bpf(ctx.get(), fd.get()); rc != 0) {
    return Failed(rc, "seccomp_export_bpf");
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return PosixError(errno, "cannot stat the seccomp filter");
  size_t count = static_cast<size_t>(st.st_size) / sizeof(struct sock_filter);
  if (count == 0 || count > BPF_MAXINSNS ||
      static_cast<size_t>(st.st_size) % sizeof(struct sock_filter) != 0) {
    return Failed(-EINVAL, "the exported program has " + std::to_string(st.st_size) + " bytes");
  }
  filter->program.resize(count);
  size_t want = count * sizeof(struct sock_filter);
  if (::pread(fd.get(), filter->program.data(), want, 0) != static_cast<ssize_t>(want)) {
    return PosixError(errno, "cannot read the seccomp filter back");
  }
  filter->fprog.len = static_cast<unsigned short>(count);
  filter->fprog.filter = filter->program.data();
  return filter;
}

}  // namespace agentd
