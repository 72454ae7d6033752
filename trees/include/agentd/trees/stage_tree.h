// StageTree: where a tar upload is built before it is accepted
// (docs/PROTOCOL.md, "Trees").
//
// Entries are created one by one, through descriptors, inside a private
// directory of the target (DIR/.agentd-stage-<random>, mode 0700). Parent
// directories are reached by a walk that opens one component at a time
// with O_NOFOLLOW, so nothing is ever written through a symlink: a member
// whose path crosses a symlink (even one the same archive created, even
// one that points inside) is refused as unsafe_path. Hard links may name
// only earlier non-directory members of the same archive.
//
// Commit() merges the staged tree into the target: an entry missing there
// is renamed in (a whole directory in one rename); a directory meeting a
// directory is merged; anything else replaces what was there without
// following it (a symlink in the target is replaced, never followed).
// Directory modes and mtimes are applied last, deepest first, so that a
// read-only directory can still be filled and a directory's mtime is not
// disturbed by its children. A StageTree destroyed without Commit()
// removes everything it staged: a refused or interrupted archive leaves
// nothing behind.
//
// What this does NOT guarantee: Commit() is a sequence of renames, not one
// atomic step; a concurrent writer in the target can interleave with it.
// Blocking; one thread at a time.
#pragma once

#include <time.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agentd/protocol/status.h"
#include "agentd/trees/ownership.h"
#include "agentd/trees/rel_path.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {

struct StageOptions {
  Ownership owner;          // applied to every created entry
  bool keep_setid = false;  // keep setuid/setgid on files (only when root)
  // Told the staging directory's name (in `dirfd`) before it is created;
  // answers a file to remove once that directory is gone ("": none). The
  // daemon journals the name there (fs/temp_journal.h) so that a crash
  // mid-extraction leaves nothing behind at its next start; the client
  // needs no journal.
  std::string (*journal)(int dirfd, const std::string& name) = nullptr;
};

class StageTree {
 public:
  // `target` is the directory being extracted into (any descriptor that can
  // serve as a dirfd); `display` names it in errors.
  static Result<StageTree> Create(int target, const std::string& display, StageOptions opts);
  StageTree(StageTree&&) noexcept = default;
  StageTree& operator=(StageTree&&) = delete;
  ~StageTree();

  // Each names the archive member (its RelPath display) in errors.
  Status AddDir(const RelPath& member, uint32_t mode, std::optional<timespec> mtime);
  // Creates a regular file; write its data through the descriptor, then
  // FinishFile.
  Result<UniqueFd> BeginFile(const RelPath& member);
  // `data_end`: one past the last byte written (the size unless the member
  // ends in a hole).
  Status FinishFile(int fd, const RelPath& member, uint64_t size, uint64_t data_end, uint32_t mode,
                    std::optional<timespec> mtime);
  Status AddSymlink(const RelPath& member, const std::string& target,
                    std::optional<timespec> mtime);
  Status AddHardlink(const RelPath& member, const RelPath& target);

  Status Commit();

 private:
  struct DirFixup {
    std::vector<std::string> parts;
    uint32_t mode = 0;
    std::optional<timespec> mtime;
    bool from_archive = false;  // false: created implicitly for a child
  };

  StageTree() = default;
  void Unjournal();  // removes the journal entry, once
  // The directory that will hold `member`, creating missing ones. The
  // descriptor is owned by the StageTree (a one-entry cache) and valid
  // until the next call.
  Result<int> ParentOf(const RelPath& member);
  // Makes room for `member`'s leaf in `parent`: removes an earlier entry of
  // the same name (a later member wins), except a directory when `keep_dir`.
  // Sets *is_dir when a directory was kept.
  Status ClearLeaf(int parent, const RelPath& member, bool keep_dir, bool* is_dir);
  Status MergeInto(int src, int dst, const std::vector<std::string>& prefix, int depth);
  Status ApplyFixups();
  void RecordDir(const std::vector<std::string>& parts, uint32_t mode,
                 std::optional<timespec> mtime, bool from_archive);
  // Forgets what was recorded at or below `key` (it was removed).
  void Forget(const std::string& key);

  UniqueFd target_;
  UniqueFd stage_;
  std::string stage_name_;
  std::string journal_entry_;  // removed once the stage is gone
  std::string display_;
  StageOptions opts_;

  // ParentOf's cache; invalidated (not closed: a caller may hold it)
  // whenever a directory is removed.
  std::vector<std::string> cached_parts_;
  UniqueFd cached_fd_;
  bool cache_valid_ = false;
  std::map<std::string, DirFixup> fixups_;  // by joined path
  std::set<std::string> linkable_;          // non-directory members created
  std::set<std::string> merged_existing_;   // directories that already existed
};

}  // namespace agentd
