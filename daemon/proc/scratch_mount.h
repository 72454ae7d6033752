// "disk_bytes" (docs/PROTOCOL.md, "Limits"): the exec's scratch space is a
// fresh tmpfs of that size mounted at its disk_path in a mount namespace of
// its own (a slave of the guest's, as for read-only paths), so a runaway
// writer fills that tmpfs, not the guest's disk, and everything written
// there is gone with the exec. The daemon makes the tmpfs itself, detached
// (fsopen/fsmount), and keeps its descriptor (ScratchDisk); the child moves
// it onto disk_path (move_mount). So the daemon sees how full it is from
// before the exec runs until after it ended, with no lookup to race.
//
// Mounting needs CAP_SYS_ADMIN (a root daemon outside a default Docker
// seccomp profile); a probe finds out at start-up in a
// throwaway child, and a daemon that cannot answers the request with
// limit_unsupported instead of running it without the bound.
#pragma once

#include <cstdint>
#include <string>

#include "agentd/protocol/status.h"
#include "agentd/trees/unique_fd.h"
#include "proc/probe_child.h"

namespace agentd {

// Child side, raw system calls only (proc/child_side.h): a new mount
// namespace (unless `in_own_namespace`: the read-only step made one) with
// the detached tmpfs `mount_fd` (ScratchDisk::Make) moved onto `path`.
// Returns 0 or the errno.
int MountScratch(const char* path, int mount_fd, bool in_own_namespace);

// Starts the probe: a throwaway child mounts a tmpfs in a namespace of
// its own.
size_t StartScratchMountProbe(ProbeChildren& probes);
// Once `probes` are waited for: "" when child `i` could, else one
// sentence saying why not.
std::string ScratchMountVerdict(const ProbeChildren& probes, size_t i);

// The daemon's handle on an exec's scratch tmpfs: made before the spawn,
// it keeps the tmpfs reachable after the exec's processes are gone (so a
// writer that ended on ENOSPC is still seen to have filled it).
class ScratchDisk {
 public:
  // A detached tmpfs of `bytes` (nosuid, nodev, mode 1777); the errno.
  static Result<ScratchDisk> Make(int64_t bytes);
  // The descriptor of one made earlier (handed over by an exec's holder or
  // an upgrade).
  static ScratchDisk Adopt(UniqueFd fd) {
    ScratchDisk d;
    d.fd_ = std::move(fd);
    return d;
  }
  bool valid() const { return static_cast<bool>(fd_); }
  int fd() const { return fd_.get(); }
  // No free block is left (the writer's next write fails with ENOSPC).
  bool Full() const;
  // Bytes in use, for the report.
  int64_t UsedBytes() const;

 private:
  UniqueFd fd_;
};

}  // namespace agentd
