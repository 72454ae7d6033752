// Metadata operations of the file routes (docs/PROTOCOL.md, "Files"):
// stat, list, mkdir, rename, delete, realpath. Each resolves its paths
// through the ConfinedRoot and then works on descriptors. They block on
// the disk: call them on the blocking pool. Errors are Status values whose
// details name the client's path.
#pragma once

#include <sys/stat.h>

#include <string>
#include <vector>

#include "agentd/protocol/fs.h"
#include "agentd/trees/ownership.h"
#include "fs/confined_root.h"
#include "fs/lexical_path.h"
#include "fs/precondition.h"

namespace agentd {

// The stat object of `st`; `target` for symlinks.
FileStat MakeFileStat(const struct stat& st, std::string path, std::optional<std::string> target);

// lstat(2) (or stat(2) with `follow`) of `rel`.
Result<FileStat> StatPath(const ConfinedRoot& root, const RelPath& rel, bool follow);
// StatPath, plus the content's ETag for a regular file this process can
// read (none for one it cannot, or one still being written).
Result<FileStat> StatWithTag(const ConfinedRoot& root, const RelPath& rel, bool follow,
                             FileTags& tags);
// The entries of directory `rel`, sorted by name, each described without
// following symlinks.
Result<std::vector<FileStat>> ListDir(const ConfinedRoot& root, const RelPath& rel);

// Creates directory `rel` with exactly `mode` (umask does not apply) and
// the requested owner. With `parents`, missing ancestors are created with
// mode 0755 (and the owner) and an existing directory is success, as
// mkdir -p; without it, an existing entry is already_exists.
Result<FileStat> MakeDir(const ConfinedRoot& root, const RelPath& rel, uint32_t mode, bool parents,
                         const Ownership& owner);
// Creates every missing directory of `rel` (mkdir -p with 0755); the ones
// it created are appended to `created` (outermost first) when given.
Status MakeParents(const ConfinedRoot& root, const RelPath& rel, const Ownership& owner,
                   std::vector<RelPath>* created = nullptr);

// rename(2) of `from` to `to`; with !overwrite an existing `to` is
// already_exists. The root itself cannot be renamed. With a guard, its
// If-Match is checked against `from` and its If-None-Match against `to`,
// both entries locked across the checks and the rename.
Status RenamePath(const ConfinedRoot& root, const RelPath& from, const RelPath& to, bool overwrite,
                  const Guard* guard = nullptr);
// Removes `rel` (recursively when asked; never following symlinks).
// The root itself is refused (unsafe_path). Returns the entries removed.
// With a guard, its precondition is checked against `rel` with the entry
// locked across the check and the removal.
Result<uint64_t> RemovePath(const ConfinedRoot& root, const RelPath& rel, bool recursive,
                            const Guard* guard = nullptr);
// Every symlink of `rel` resolved (confined); the target must exist.
Result<RelPath> RealPath(const ConfinedRoot& root, const RelPath& rel);

}  // namespace agentd
