// The overlay fast path of a reset path (docs/PROTOCOL.md, "Reuse"):
// where the daemon is root and the kernel has overlayfs, the reset path is
// an overlay whose lower layer is the golden copy (never written: overlayfs
// writes only to the upper) and whose upper and work dirs lie on a tmpfs of
// their own at `dir` (<state-dir>/reset-overlay/N). A reset detaches the
// overlay, with whatever a tenant mounted on or in it, and the tmpfs, then
// mounts a fresh tmpfs and overlay: its cost does not grow with what the
// tenant wrote.
//
// Mounts and unmounts follow the propagation of the mounts they are made
// under (nothing is made private): a peer namespace sees the same swap, and
// never keeps a copy of an upper after it is gone here.
//
// `base_mnt` is the mount id of the reset path beneath the overlay (the
// path's own file system, or a mount the operator made there): a reset
// detaches every mount above it, so nothing a tenant mounted over the
// path survives hidden beneath the new overlay. Any thread (blocking work).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "agentd/protocol/reset.h"
#include "agentd/protocol/status.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {

struct OverlaySlot {
  std::string live;   // the reset path
  std::string lower;  // its golden copy
  std::string dir;    // the tmpfs holding upper/ and work/
  uint64_t base_mnt = 0;
  uint64_t base_tmp_mnt = 0;     // the mount id of `dir`'s parent
  uint64_t inodes_at_mount = 0;  // the tmpfs's inodes in use right after a mount
  // The path's own mode and owner, which the overlay's root takes from the
  // upper dir: as at start, not as a tenant left them.
  mode_t root_mode = 0755;
  uid_t root_uid = 0;
  gid_t root_gid = 0;
};

// Why no reset path can be an overlay here ("" when one can): not root, or
// the kernel lacks overlayfs.
std::string OverlayUnavailable();

// Sets up `slot` at start: adopts an overlay of an earlier start of this
// daemon (an upgrade in place or a restart keeps the tenant's files), or
// mounts a fresh one. An error says why this path cannot be an overlay
// (the caller then restores it by copying, and says so in the log and in
// health).
Status OpenOverlay(OverlaySlot& slot);

// Detaches an overlay of an earlier start from `live` (and its tmpfs):
// before the golden copy is made again from the path's own contents.
void DetachStaleOverlay(const std::string& live, const std::string& dir);

// The old overlay and tmpfs after a swap: detached (no path reaches them)
// but held open. The kernel frees what the tenant left in them (inodes,
// dentries, pages) when the last reference goes, inside the call that
// drops it: ~120 ms of CPU for 10,000 files / 195 MiB (docs/BENCHMARKS.md,
// "Reset with overlays"). Release() drops them on a thread of its own;
// destroyed unreleased, they are dropped in the destroying thread.
class DetachedLayers {
 public:
  DetachedLayers() = default;
  DetachedLayers(int top, int tmp, int64_t entries, int64_t bytes)
      : top_(top), tmp_(tmp), entries_(entries), bytes_(bytes) {}

  // Drops `layers` on a detached thread, which then logs "reset overlay
  // released" (the generation they belonged to, entries, bytes and how
  // long the kernel took).
  static void Release(std::vector<DetachedLayers> layers, int64_t generation);

 private:
  UniqueFd top_;
  UniqueFd tmp_;
  int64_t entries_ = 0;
  int64_t bytes_ = 0;
};

struct OverlaySwap {
  int64_t removed_entries = 0;  // inodes the tenant made in the upper
  int64_t removed_bytes = 0;    // bytes they used
  std::vector<ResetRemaining> remaining;
  DetachedLayers old;  // for the caller to release once the reset has answered
};

// The reset: the old overlay and tmpfs detached, fresh ones mounted.
OverlaySwap SwapOverlay(OverlaySlot& slot);

// The verification of the mount (the walk of its contents is the caller's,
// reuse/tree_restore.h): an overlay is the top mount of the path, it is the
// one mounted here (its upper dir is ours) and that upper dir is empty.
std::vector<ResetRemaining> OverlayLeft(const OverlaySlot& slot);

}  // namespace agentd
