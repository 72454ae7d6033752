// Changed files of a code run (docs/PROTOCOL.md, "Run code"): a snapshot of
// a directory tree before the run and one after, compared.
//
// A snapshot records, for every entry below the root, its type, size,
// mode, inode, and mtime and ctime with nanoseconds, read with fstatat
// (no symlink is followed, no other file system is entered, the daemon's
// state directory is skipped). Directories are read in sorted order, so
// two scans of an unchanged tree read the same entries. A scan stops at an
// entry bound or a time bound and says which it hit; only directories both
// scans read completely are compared, so a bound never turns into false
// "removed" entries.
//
// Fast writes: a file whose mtime or ctime is within kRacyWindowNs before
// the first scan began could be rewritten with the same size within the
// same timestamp tick (coarse clocks, file systems with 1 s or 2 s
// timestamps), where its stat would not change. Such "racy" files (as git
// calls them) are hashed (SHA-256, within a byte budget) by the first scan,
// and again by the second when their stat is unchanged.
//
// Blocking: run on the blocking pool. Not thread-safe per snapshot.
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "agentd/protocol/limits.h"
#include "agentd/protocol/run.h"
#include "agentd/protocol/status.h"

namespace agentd {

inline constexpr int64_t kRacyWindowNs = 2'000'000'000;
inline constexpr uint64_t kRacyHashBudgetBytes = 32ull << 20;
inline constexpr uint64_t kRacyHashMaxFileBytes = 8ull << 20;

struct ScanEntry {
  char type = 'o';  // 'f' file, 'd' dir, 'l' symlink, 'o' other
  uint64_t size = 0;
  uint32_t mode = 0;
  uint64_t ino = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  std::optional<std::array<uint8_t, 32>> hash;  // racy files only
};

struct ScanOptions {
  uint64_t max_entries = 250'000;
  std::chrono::milliseconds max_time{2000};
  // Directories queued for reading keep their descriptor up to this many;
  // the rest are opened again by path when their turn comes, so a wide
  // tree never uses up the daemon's descriptors.
  size_t max_open_dirs = 64;
  // A directory never entered (the state directory), by device and inode.
  std::optional<std::pair<dev_t, ino_t>> exclude;
};

struct TreeSnapshot {
  std::unordered_map<std::string, ScanEntry> entries;  // by path relative to the root
  std::unordered_set<std::string> complete_dirs;       // read whole ("" is the root)
  std::optional<LimitHit> bound;                       // the bound that stopped the scan
  int64_t started_ns = 0;                              // CLOCK_REALTIME at the start
  uint64_t hashed_bytes = 0;
};

// `before`: the earlier snapshot, when this is the second scan (racy files
// are hashed again where their stat did not change).
Result<TreeSnapshot> ScanTree(const std::string& root, const ScanOptions& options,
                              const TreeSnapshot* before = nullptr);

struct TreeDiff {
  std::vector<ChangedFile> changes;  // sorted by path
  size_t total = 0;                  // changes found (changes holds at most max_changes)
  bool truncated = false;            // a scan bound or max_changes left some out
  std::optional<LimitHit> bound;
};

TreeDiff DiffTrees(const TreeSnapshot& before, const TreeSnapshot& after, size_t max_changes);

// (dev, ino) of a directory, for ScanOptions::exclude.
std::optional<std::pair<dev_t, ino_t>> DirIdentity(const std::string& path);

}  // namespace agentd
