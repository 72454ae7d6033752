// What scanning the files of a search reports, in walk order: a file that
// could not be opened, a file begun, each match line, how the file ended.
// SearchTally (search/search_tally.h) applies these to the answer; a
// ScanLog records them on a scanning thread so that the walking thread
// can apply them later, in walk order (search/parallel_scan.h). Both
// paths apply the same events in the same order, so the answer and its
// bounds do not depend on which thread scanned a file.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/trees/unique_fd.h"
#include "search/file_scanner.h"

namespace agentd {

enum class FileOutcome : uint8_t {
  kDone,
  kUnreadable,  // a read or match failed: counted unreadable (and scanned)
  kBinary,      // skipped: counted binary, not scanned
  kTimedOut,    // the time bound passed mid-file
};

class ScanSink {
 public:
  virtual ~ScanSink() = default;
  // Each returns false when the search must stop.
  virtual bool Unreadable(uint64_t n) = 0;  // files or directories not opened
  virtual bool FileStart() = 0;
  virtual bool Match(std::string_view ndjson_line) = 0;
  virtual bool FileEnd(FileOutcome outcome) = 0;
};

// Events kept in order, match lines back to back in one string.
class ScanLog : public ScanSink {
 public:
  bool Unreadable(uint64_t n) override;
  bool FileStart() override;
  bool Match(std::string_view ndjson_line) override;
  bool FileEnd(FileOutcome outcome) override;

  // Applies every event to `to` in order; false as soon as `to` says stop.
  bool Replay(ScanSink& to) const;
  // Moves `other`'s events after these.
  void Append(ScanLog&& other);
  void Clear();
  // Room for `bytes` of match lines without growing.
  void Reserve(size_t bytes) { ndjson_.reserve(bytes); }
  bool empty() const { return events_.empty(); }
  size_t bytes() const { return ndjson_.size(); }

 private:
  enum class Kind : uint8_t { kUnreadable, kFileStart, kMatch, kFileEnd };
  struct Event {
    Kind kind;
    FileOutcome outcome;  // kFileEnd
    uint64_t value;       // kUnreadable: count; kMatch: line bytes
  };
  std::vector<Event> events_;
  std::string ndjson_;
};

// Scans the file just opened as `fd` (invalid when the open failed) into
// `sink`: a file that is not (or no longer) regular, or whose open or stat
// failed, is one unreadable; a large one is scanned in parts on several
// threads (FileScanOptions::split_parts, search/split_scan.h). False when
// the sink says stop.
bool ScanOpenedFile(FileScanner& scanner, const UniqueFd& fd, std::string_view path,
                    ScanSink& sink);
// The same once the open file `fd` is known to be a regular file of
// `size` bytes; `content`, when given, is the whole file already read
// (FileScanner::ScanContent).
bool ScanRegularFile(FileScanner& scanner, int fd, off_t size, std::string_view path,
                     ScanSink& sink, const std::string_view* content = nullptr);

}  // namespace agentd
