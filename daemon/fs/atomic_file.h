// AtomicFile: a file write that lands whole or not at all
// (docs/PROTOCOL.md, "Files", PUT /v1/fs/file).
//
// The bytes go to a temporary file (".agentd-tmp-<random>") in the target's
// directory, created with mode 0600 and then given its owner and exact
// mode (fchown, then fchmod: umask never applies). Commit() fsyncs it,
// renames it over the target and fsyncs the directory. Until then the old
// file is untouched; an AtomicFile destroyed without Commit() removes its
// temporary, so an error or a dropped connection leaves nothing behind.
// A final symlink in the target path is followed (confined): the write
// lands on the file it names, and the symlink stays. A replaced file's
// mode, owner (when root) and extended attributes carry over.
//
// With FileTags, Commit() holds the target entry's lock across the
// precondition check (if any) and the rename. The new content's ETag is
// the caller's to compute from the bytes it writes (an upload hashes on
// another thread, fs/background_hasher.h); Commit() answers it.
//
// Blocking; one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "agentd/protocol/fs.h"
#include "agentd/trees/ownership.h"
#include "agentd/trees/unique_fd.h"
#include "fs/confined_root.h"
#include "fs/file_tags.h"
#include "fs/lexical_path.h"
#include "fs/precondition.h"
#include "fs/temp_journal.h"

namespace agentd {

struct WriteOptions {
  // Absent: the replaced file's mode, or 0644 for a new file.
  std::optional<uint32_t> mode;
  bool parents = false;  // create missing directories (mkdir -p, 0755)
  // Absent parts keep the replaced file's owner when the daemon is root.
  Ownership owner;
  // The body's declared length (Content-Length): checked against free space
  // before anything is written, then reserved with fallocate.
  std::optional<uint64_t> expected_size;
  // If-Match / If-None-Match: checked at Create (so a refusal comes before
  // the body) and again, under the entry lock, just before the rename.
  Precondition precondition;
  FileTags* tags = nullptr;  // needed for a precondition and for the ETag
};

class AtomicFile {
 public:
  static Result<AtomicFile> Create(const ConfinedRoot& root, const RelPath& rel,
                                   const WriteOptions& opts);
  AtomicFile(AtomicFile&& other) noexcept = default;
  AtomicFile& operator=(AtomicFile&&) = delete;
  ~AtomicFile();

  // Appends; ENOSPC is 507 insufficient_storage with real numbers.
  Status Write(std::string_view data);
  // Makes the new content visible under the target name; the stat object
  // of the written file, with `etag` (the tag of every byte written;
  // absent when the caller hashed nothing).
  Result<FileStat> Commit(std::optional<std::string> etag);
  uint64_t written() const { return written_; }

 private:
  AtomicFile() = default;
  Status CarryXattrs(const std::string& display);
  void Discard();  // removes the temporary unless committed

  UniqueFd dir_;   // the target's directory (O_PATH)
  UniqueFd file_;  // the temporary
  std::string temp_name_;
  TempJournal::Entry journal_;  // forgotten once the temporary is gone
  std::string leaf_;
  std::string display_;
  uint64_t written_ = 0;
  uint64_t expected_ = 0;
  Precondition precondition_;
  FileTags* tags_ = nullptr;
  bool committed_ = false;
};

}  // namespace agentd
