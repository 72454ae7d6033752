#include "search/scan_events.h"

#include <sys/stat.h>

#include "search/split_scan.h"

namespace agentd {

bool ScanLog::Unreadable(uint64_t n) {
  events_.push_back({Kind::kUnreadable, FileOutcome::kDone, n});
  return true;
}

bool ScanLog::FileStart() {
  events_.push_back({Kind::kFileStart, FileOutcome::kDone, 0});
  return true;
}

bool ScanLog::Match(std::string_view ndjson_line) {
  events_.push_back({Kind::kMatch, FileOutcome::kDone, ndjson_line.size()});
  ndjson_.append(ndjson_line);
  return true;
}

bool ScanLog::FileEnd(FileOutcome outcome) {
  events_.push_back({Kind::kFileEnd, outcome, 0});
  return true;
}

bool ScanLog::Replay(ScanSink& to) const {
  size_t at = 0;
  for (const Event& e : events_) {
    bool go = true;
    switch (e.kind) {
      case Kind::kUnreadable:
        go = to.Unreadable(e.value);
        break;
      case Kind::kFileStart:
        go = to.FileStart();
        break;
      case Kind::kMatch:
        go = to.Match(std::string_view(ndjson_).substr(at, e.value));
        at += e.value;
        break;
      case Kind::kFileEnd:
        go = to.FileEnd(e.outcome);
        break;
    }
    if (!go) return false;
  }
  return true;
}

void ScanLog::Append(ScanLog&& other) {
  if (events_.empty()) {
    events_ = std::move(other.events_);
    ndjson_ = std::move(other.ndjson_);
  } else {
    events_.insert(events_.end(), other.events_.begin(), other.events_.end());
    ndjson_ += other.ndjson_;
  }
  other.Clear();
}

void ScanLog::Clear() {
  events_.clear();
  ndjson_.clear();
}

bool ScanOpenedFile(FileScanner& scanner, const UniqueFd& fd, std::string_view path,
                    ScanSink& sink) {
  struct stat st;
  // A FIFO or device swapped in since the listing is not read.
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return sink.Unreadable(1);
  return ScanRegularFile(scanner, fd.get(), st.st_size, path, sink);
}

bool ScanRegularFile(FileScanner& scanner, int fd, off_t size, std::string_view path,
                     ScanSink& sink, const std::string_view* content) {
  if (!sink.FileStart()) return false;
  const FileScanOptions& o = scanner.options();
  const FileScanner::Emit emit = [&](std::string_view line) { return sink.Match(line); };
  Result<FileScanResult> r = content ? scanner.ScanContent(*content, path, emit)
                             : o.split_parts > 1 && size >= o.split_min_bytes
                                 ? SplitScan(scanner, fd, path, emit, size, o.split_parts)
                                 : scanner.Scan(fd, path, emit, size);
  if (!r.ok()) return sink.FileEnd(FileOutcome::kUnreadable);
  if (r->stopped) return false;
  if (r->binary) return sink.FileEnd(FileOutcome::kBinary);
  if (r->timed_out) return sink.FileEnd(FileOutcome::kTimedOut);
  return sink.FileEnd(FileOutcome::kDone);
}

}  // namespace agentd
