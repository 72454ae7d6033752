// Returning a reset path to its golden copy (docs/PROTOCOL.md, "Reuse"),
// without overlayfs: delete what the golden copy lacks, replace what
// differs (type, contents, symlink target), fix modes, owners and mtimes.
//
// The live tree is the tenant's: it is walked with *at() calls from
// directory descriptors and never followed through a symlink, and a
// directory on another file system (a mount the tenant made) is not
// entered: it cannot be removed, so it is named as remaining.
//
// Contents are compared by identity first: `manifest` holds each regular
// file's (inode, ctime) as the last restore (or the snapshot) left it.
// Any write, chmod, chown, link or rename moves ctime, which no
// unprivileged call can set back, so an unchanged pair means unchanged
// contents; otherwise bytes are compared. Hard links in the golden copy
// become separate files. Any thread (blocking work).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "agentd/protocol/reset.h"
#include "agentd/protocol/status.h"

namespace agentd {

// Relative path -> (inode, ctime in ns) of the regular files of a live tree.
using TreeManifest = std::unordered_map<std::string, std::pair<ino_t, int64_t>>;

struct RestoreResult {
  int64_t removed_entries = 0;            // live entries deleted (extra or replaced)
  int64_t removed_bytes = 0;              // the sizes of the regular files among them
  int64_t removed_ipc_objects = 0;        // System V objects (reuse/ipc_sweep.h)
  std::vector<ResetRemaining> remaining;  // what could not be made equal
};

// Copies the tree at `from` into `to` (which must not exist): the golden
// copy at start. Fills `manifest` for `from`'s regular files.
Status SnapshotTree(const std::string& from, const std::string& to, TreeManifest& manifest);

// Makes `live` equal to `golden`; updates `manifest`.
RestoreResult RestoreTree(const std::string& golden, const std::string& live,
                          TreeManifest& manifest);

// The verification walk: every difference between the trees (names,
// types, sizes, modes, owners, symlink targets, and regular files whose
// identity is not the manifest's), as remaining items named by live path.
// With `learn` (an overlay, whose files keep the golden copy's identities
// across swaps), a file whose identity is not the manifest's is compared
// by bytes instead, and its identity learned when they are equal.
std::vector<ResetRemaining> CompareTrees(const std::string& golden, const std::string& live,
                                         const TreeManifest& manifest,
                                         TreeManifest* learn = nullptr);

}  // namespace agentd
