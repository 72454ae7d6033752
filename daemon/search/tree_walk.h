// TreeWalk: the walk shared by search and glob (docs/PROTOCOL.md, "Search"
// and "Glob"): depth first, entries in byte order, below one directory of
// the confined root. It skips hidden names (a leading '.') unless asked,
// always skips ".git" directories, honours .gitignore, .ignore and
// .git/info/exclude (fs/ignore_rules.h) unless asked not to, and prunes
// names matching an `exclude` pattern. Symlinks are reported, not entered,
// unless `follow`: then they are opened through the confined root
// (openat2 RESOLVE_BENEATH), so a link can never lead out of it, and a
// directory already on the current path (a loop) is not entered again.
// Not thread-safe (OpenListed aside); one walk per thread.
#pragma once

#include <sys/stat.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/protocol/status.h"
#include "agentd/trees/dir_entries.h"
#include "agentd/trees/unique_fd.h"
#include "fs/confined_root.h"
#include "fs/lexical_path.h"
#include "search/ignore_rules.h"

namespace agentd {

struct WalkOptions {
  bool hidden = false;
  bool gitignore = true;
  bool follow = false;
  std::vector<std::string> exclude;  // wildmatch patterns (see PathFilterMatches)
};

// A filter pattern without '/' matches an entry's name; one with '/'
// matches its path relative to the walk's start.
bool PathFilterMatches(const std::string& pattern, const std::string& walk_path);

struct WalkEntry {
  int dir_fd;                    // the directory holding it
  const std::string& name;       // its name there
  const std::string& walk_path;  // relative to the walk's start
  mode_t type;                   // S_IFREG, S_IFDIR, S_IFLNK, ... (of the target when followed)
  // The stat the walk made (lstat; of the target when followed), or
  // nullptr when the directory listing told the type (most entries).
  const struct stat* st;
  bool followed_link;  // reached through a symlink (follow=1)
};

// What the visitor says about an entry.
enum class WalkStep { kContinue, kSkip /* do not enter this directory */, kStop };

struct WalkCounts {
  uint64_t unreadable = 0;  // directories or links that could not be opened
};

class TreeWalk {
 public:
  TreeWalk(const ConfinedRoot& root, RelPath start, WalkOptions opts)
      : root_(root), start_(std::move(start)), opts_(std::move(opts)) {}

  // Walks below the directory `start_fd` (opened from start_ with
  // O_RDONLY | O_DIRECTORY). `visit` sees each entry that passes the
  // filters; directories after their entry is visited. Stops early when
  // visit says kStop. Only a failure to read `start_fd` itself is an
  // error; unreadable entries below are counted and skipped.
  Status Run(int start_fd, const std::function<WalkStep(const WalkEntry&)>& visit);

  const WalkCounts& counts() const { return counts_; }
  // Opens what `e` names (its target when e.followed_link, through the
  // root), never following a symlink otherwise. Invalid on failure.
  UniqueFd Open(const WalkEntry& e, int flags) const;
  // The same for an entry listed earlier (`name` in `dir_fd`, or, when
  // `followed`, `walk_path` through the root). Safe from other threads
  // while the walk runs: it reads only the root and the start.
  UniqueFd OpenListed(int dir_fd, const char* name, std::string_view walk_path, bool followed,
                      int flags) const;

 private:
  WalkStep Dir(int fd, const std::string& walk_path, int depth, std::vector<DirEntry> entries,
               const std::function<WalkStep(const WalkEntry&)>& visit);
  // Pushes the ignore frames of the directory `fd` (at `walk_path`) whose
  // entries are `listed`; returns how many.
  size_t PushIgnoreFiles(int fd, const std::string& walk_path, bool repo_top,
                         const std::vector<DirEntry>& listed);
  void PushAncestorIgnores();
  UniqueFd OpenFollowed(std::string_view walk_path, int flags) const;

  const ConfinedRoot& root_;
  RelPath start_;
  WalkOptions opts_;
  IgnoreStack ignores_;
  std::vector<std::pair<dev_t, ino_t>> on_path_;  // directories being walked (follow=1)
  WalkCounts counts_;
};

}  // namespace agentd
