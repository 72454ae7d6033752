// FilePrefetch: the files of a batch (search/parallel_scan.h) opened,
// stat'ed and, when small, read a window at a time through an io_uring
// (search/io_ring.h), then scanned one by one as ScanOpenedFile would
// after its own open: one io_uring_enter per step for up to kPrefetchFiles
// files instead of four system calls per file (open, fstat, read, close).
//
// The answer is the same as with plain calls: a file that cannot be
// opened, or that is not a regular file, is one unreadable (as when the
// scanner opens it); the stat is the open file's; only a read that
// returned the file's whole size (as stat'ed) is scanned from memory, any
// other result (an error, a file that grew or shrank, one too large for
// the window's buffer) is read again by the scanner through the descriptor.
// Links a followed walk reached are opened through the confined root as
// before (TreeWalk::OpenListed). Without a ring (the kernel refuses one,
// or it failed), every file takes the plain path. One per scanning thread.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/trees/unique_fd.h"
#include "search/file_scanner.h"
#include "search/io_ring.h"
#include "search/parallel_scan.h"
#include "search/scan_events.h"
#include "search/tree_walk.h"

namespace agentd {

// Files opened at once by one scanning thread (descriptors held).
inline constexpr size_t kPrefetchFiles = 32;
// The window's read buffer: files that do not fit are read by the scanner.
inline constexpr size_t kPrefetchBytes = 256 * 1024;

class FilePrefetch {
 public:
  // `use_ring` false: plain system calls (as when no ring can be made).
  FilePrefetch(const TreeWalk& walk, bool use_ring);
  ~FilePrefetch();
  FilePrefetch(const FilePrefetch&) = delete;
  FilePrefetch& operator=(const FilePrefetch&) = delete;

  // Scans file `i` of `batch` into `sink`; false when the sink says stop.
  bool Scan(FileScanner& scanner, const FileBatch& batch, size_t i, ScanSink& sink);

  bool ring() const { return ring_ != nullptr; }
  // Files scanned from what the ring read (not read again).
  uint64_t scanned_from_ring() const { return from_ring_; }

 private:
  struct Slot {
    UniqueFd fd;
    bool regular = false;
    off_t size = 0;
    size_t content_at = 0;
    bool have_content = false;
  };
  // Opens, stats and reads files [from, from + kPrefetchFiles) of `batch`
  // (closing the window before). False: the ring failed (it is dropped).
  bool Prepare(const FileBatch& batch, size_t from);
  void DropRing();

  const TreeWalk& walk_;
  std::unique_ptr<IoRing> ring_;
  uint64_t serial_ = 0;  // the batch the window is of
  size_t first_ = 0;
  std::vector<Slot> slots_;
  std::unique_ptr<char[]> buf_;
  uint64_t from_ring_ = 0;
};

}  // namespace agentd
