// Spawn: starts one child the way docs/PROTOCOL.md ("Start") promises.
//
// The parent prepares everything (argv, envp, the PATH candidates, the
// group list) and then clone(CLONE_VM | CLONE_VFORK)s onto a small private
// stack, with every signal blocked around the call. The child runs only
// async-signal-safe system calls: default dispositions for every signal and
// an empty mask, a new session (so its own process group, pgid == pid),
// stdin/stdout/stderr from the given descriptors (for a PTY exec the slave,
// which becomes the controlling terminal), setgroups/setresgid/
// setresuid as raw system calls (glibc's wrappers would broadcast the change
// to every daemon thread, since the child shares their memory), chdir, the
// daemon's original RLIMIT_NOFILE, every other descriptor closed, and
// execve over the PATH candidates with execvpe's rules. A failing step
// stores its errno and step in the ChildArgs the parent shares, then exits
// 127 (not found) or 126 (anything else). (No close-on-exec error pipe is
// needed: with CLONE_VFORK the parent resumes only once the child has
// exec'd or exited, so it reads that memory after the child wrote it; one
// descriptor and one read fewer per spawn.)
//
// Resource limits (docs/PROTOCOL.md, "Limits") are applied in the child
// before anything of the exec runs: right after setsid it joins its cgroups
// by writing "0" (itself) to each given cgroup.procs descriptor, so no
// process of the exec ever runs outside them and every later fork inherits
// them (race-free without CLONE_INTO_CGROUP, and the same for cgroup v1 and
// v2); it raises its oom_score_adj (a CLONE_VFORK child's write does not
// propagate to the daemon that shares its memory, and raising needs no
// privilege); and it sets its rlimits before it drops privileges.
//
// A restricted spawn (docs/SECURITY.md, "Restricted execs") adds, in this
// order: its read-only paths bound in a mount namespace of its own, every capability dropped from
// the bounding set and the ambient set cleared (while still root), the identity switch above, the
// permitted, effective and inheritable sets emptied with capset, no_new_privs, and last, just
// before execve, the seccomp filter prepared at start-up (proc/refusal_filter.h). A step that fails
// fails the spawn: a restricted exec never runs with less than it reports.
//
// Called on the io thread only (the thread is suspended until the child
// has exec'd or exited, typically well under a millisecond).
#pragma once

#include <linux/filter.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agentd/protocol/status.h"
#include "proc/user_db.h"

namespace agentd {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] is searched in PATH unless it has a '/'
  std::vector<std::string> env;   // "NAME=value"; its PATH drives the search
  std::optional<std::string> cwd;
  const Credentials* credentials = nullptr;  // null: keep the daemon's identity
  int stdin_fd = -1;                         // each >= 3 (see sys/pipe.h)
  int stdout_fd = -1;
  int stderr_fd = -1;
  // Given to the child as its descriptor 3 (>= 3; -1: none): a run's
  // report channel (run/code_drivers.h). Every other descriptor is closed.
  int fd3 = -1;
  std::optional<struct rlimit> nofile;  // the limit to give the child
  // stdin is a PTY slave that becomes the child's controlling terminal.
  bool controlling_terminal = false;
  // Open cgroup.procs files the child joins before it runs anything.
  std::vector<int> cgroup_procs_fds;
  // (resource, value): soft and hard limit, lowered to the current hard
  // limit when the child may not raise it.
  std::vector<std::pair<int, rlim_t>> rlimits;
  std::optional<int> oom_score_adj;
  // The restricted profile: the child drops every capability and sets
  // no_new_privs; it loads `seccomp_filter` when set (it must outlive the
  // call; null only under --restricted-without-seccomp on a kernel that
  // cannot load one).
  bool restricted = false;
  const struct sock_fprog* seccomp_filter = nullptr;
  // Bound read-only in a private mount namespace of the child
  // (proc/readonly_mounts.h), before it gives up its capabilities.
  std::vector<std::string> readonly_paths;
  // "network": "none": a network namespace of its own with only loopback
  // (proc/empty_network.h), entered while the child may still.
  bool empty_network = false;
  // "disk_bytes": the detached tmpfs `scratch_mount_fd` (proc/scratch_mount.h)
  // moved onto `scratch_path` (absolute; "" for none), in the mount
  // namespace of the read-only paths when there is one, else in its own.
  std::string scratch_path;
  int scratch_mount_fd = -1;
  // An egress policy is attached to one of the cgroups above
  // (limits/egress_guard.h): right after joining them the child enters a
  // cgroup namespace rooted there (so nothing of the exec can move itself
  // out), and later drops from its bounding set the capabilities that could
  // detach the programs or send around them (kEgressDroppedCaps).
  bool egress_policed = false;
  // Spawned under a holder (proc/exec_holder.h), which is then the child's
  // parent: `conn` is the holder's end of its connection to the daemon,
  // `out`/`err` the read ends it keeps, `in`/`in_relay`/`in_keep` the
  // stdin it passes on (or `in` and `in_data`/`in_size`: a memfd of the
  // whole stdin), `pty`/`pty_out` a PTY's master and the pipe its
  // output goes on into (HolderFds), `channel` the daemon's end of a
  // context's channel, which it keeps for a restarted daemon, and it binds
  // `socket_dir`/<child pid>.sock (the whole path under 108 bytes).
  struct Holder {
    int conn = -1;
    int out = -1;
    int err = -1;
    int in = -1;
    int in_relay = -1;
    int in_keep = -1;
    int in_data = -1;
    uint64_t in_size = 0;
    int pty = -1;
    int pty_out = -1;
    int channel = -1;
    std::string socket_dir;
  };
  const Holder* holder = nullptr;
};

// CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN, CAP_BPF, CAP_PERFMON,
// CAP_SYS_MODULE, CAP_SYS_PTRACE, CAP_SYS_RAWIO.
extern const int kEgressDroppedCaps[8];

struct SpawnResult {
  pid_t pid = -1;  // > 0 whenever a child exists (also when its exec failed)
  int error = 0;   // errno of the step that failed in the child; 0 on success
  // When error != 0: "cannot execute python4: No such file or directory".
  std::string reason;
  int exit_code = 0;  // what the failed child exits with: 127 or 126
  // Under a holder: its pid (the daemon's child; on a failed spawn it has
  // reaped the child and exits with its code), why it could not bind its
  // socket (0: it did), and its stack, freed by FreeHolderStack() only
  // once the holder was reaped.
  pid_t holder_pid = -1;
  int holder_listen_error = 0;
  void* holder_stack = nullptr;
};

void FreeHolderStack(void* stack);

// A Status only when no child could be created at all (clone failed).
Result<SpawnResult> Spawn(const SpawnSpec& spec);

// The exit code of a failed spawn step: 127 for "not found", else 126.
int SpawnFailureExitCode(int err);

// The directories searched when the child's environment has no PATH.
inline constexpr char kDefaultPath[] =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

}  // namespace agentd
