// "disk_bytes" (docs/PROTOCOL.md, "Limits"): the exec's scratch space is a
// fresh tmpfs of that size mounted at its disk_path in a mount namespace of
// its own (a slave of the guest's, as for read-only paths), so a runaway
// writer fills that tmpfs, not the guest's disk, and everything written
// there is gone with the exec. The daemon watches the mount through
// /proc/<pid>/root (ScratchDisk) and ends the exec once it is full.
//
// Mounting needs CAP_SYS_ADMIN (a root daemon outside a default Docker
// seccomp profile); ProbeScratchMount() finds out at start-up in a
// throwaway child, and a daemon that cannot answers the request with
// limit_unsupported instead of running it without the bound.
#pragma once

#include <cstdint>
#include <string>

#include "agentd/trees/unique_fd.h"

namespace agentd {

// The tmpfs mount options for `bytes`: "size=<bytes>,mode=1777".
std::string ScratchMountOptions(int64_t bytes);

// Child side, raw system calls only (proc/child_side.h): a new mount
// namespace (unless `in_own_namespace`: the read-only step made one)
// with a tmpfs mounted at `path`. Returns 0 or the errno.
int MountScratch(const char* path, const char* options, bool in_own_namespace);

// "" when a throwaway child could mount a tmpfs in a namespace of its own,
// else one sentence saying why not.
std::string ProbeScratchMount();

// The daemon's handle on an exec's scratch tmpfs: opened through the
// leader's /proc/<pid>/root right after the spawn, it keeps the mount
// reachable after the exec's processes are gone (so a writer that ended on
// ENOSPC is still seen to have filled it).
class ScratchDisk {
 public:
  // Fails (returns an invalid handle) unless `path` seen from `pid` is a tmpfs.
  static ScratchDisk Open(int pid, const std::string& path);
  bool valid() const { return static_cast<bool>(fd_); }
  // No free block is left (the writer's next write fails with ENOSPC).
  bool Full() const;
  // Bytes in use, for the report.
  int64_t UsedBytes() const;

 private:
  UniqueFd fd_;
};

}  // namespace agentd
