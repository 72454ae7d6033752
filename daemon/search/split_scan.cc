#include "search/split_scan.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "agentd/trees/posix_error.h"

namespace agentd {
namespace {

// A part hands over what it found in blocks of this size (a lock each),
// each made this big at once (lines are short; a longer one grows it).
constexpr size_t kPublishBytes = 64 * 1024;
constexpr size_t kPublishReserve = kPublishBytes + kPublishBytes / 4;
// How often the emitting thread, waiting on a part, looks whether the
// search was ended elsewhere (FileScanOptions::cancel).
constexpr auto kCancelCheckEvery = std::chrono::milliseconds(50);

struct Part {
  ScanRange range;
  std::thread thread;  // not joinable: scanned by the emitting thread
  // Under Split::mu once the thread runs: matches found, not yet emitted
  // (whole NDJSON lines), in the blocks the thread handed over (moved, not
  // appended: a part whose matches wait for the parts before it would
  // otherwise grow one string to megabytes, copying it and faulting in
  // fresh pages at each doubling).
  std::vector<std::string> held;
  size_t held_bytes = 0;
  bool done = false;
  Result<FileScanResult> result;
};

struct Split {
  std::mutex mu;
  std::condition_variable cv;  // a part published or ended; room; stop
  std::atomic<bool> stop{false};
  std::vector<std::unique_ptr<Part>> parts;

  // Whatever ends the scan, the threads stop within a block and are joined.
  ~Split() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    for (auto& p : parts) {
      if (p->thread.joinable()) p->thread.join();
    }
  }
};

// A part's thread: scans into `part.held`, waiting while it is full.
void ScanPart(Split& split, Part& part, const FileScanner& first, int fd, const std::string& path,
              off_t size) {
  FileScanOptions o = first.options();
  o.cancel = &split.stop;
  FileScanner scanner(first.matcher(), o);
  std::string found;
  found.reserve(kPublishReserve);
  auto publish = [&] {
    std::unique_lock<std::mutex> lock(split.mu);
    part.held_bytes += found.size();
    part.held.push_back(std::move(found));
    split.cv.notify_all();
    split.cv.wait(lock, [&] { return split.stop || part.held_bytes < kSplitHeldBytes; });
    const bool go = !split.stop;
    lock.unlock();
    found = std::string();
    found.reserve(kPublishReserve);
    return go;
  };
  Result<FileScanResult> r = scanner.Scan(
      fd, path,
      [&](std::string_view line) {
        found.append(line);
        if (found.size() >= kPublishBytes) return publish();
        return !split.stop.load(std::memory_order_relaxed);
      },
      size, part.range);
  std::lock_guard<std::mutex> lock(split.mu);
  if (!found.empty()) {
    part.held_bytes += found.size();
    part.held.push_back(std::move(found));
  }
  part.result = std::move(r);
  part.done = true;
  split.cv.notify_all();
}

// Emits a threaded part's matches as its thread finds them, each raised
// by `base` lines; answers the part's result (stopped: emit said stop or
// the search was cancelled).
Result<FileScanResult> Drain(Split& split, Part& part, uint64_t base, const FileScanner::Emit& emit,
                             const std::atomic<bool>* cancel) {
  FileScanResult stopped;
  stopped.stopped = true;
  std::vector<std::string> take;
  std::string line;  // one shifted line at a time, its buffer reused
  for (;;) {
    bool done;
    {
      std::unique_lock<std::mutex> lock(split.mu);
      while (part.held.empty() && !part.done) {
        if (cancel && cancel->load(std::memory_order_relaxed)) return stopped;
        split.cv.wait_for(lock, kCancelCheckEvery);
      }
      take.clear();
      take.swap(part.held);
      part.held_bytes = 0;
      done = part.done;
    }
    split.cv.notify_all();  // room for the part's thread
    for (const std::string& block : take) {
      for (size_t at = 0; at < block.size();) {
        size_t end = block.find('\n', at) + 1;  // NDJSON lines hold no raw newline
        ShiftMatchLineInto(line, std::string_view(block).substr(at, end - at), base);
        if (!emit(line)) return stopped;
        at = end;
      }
    }
    if (done) return std::move(part.result);
  }
}

}  // namespace

Result<std::vector<off_t>> SplitPoints(int fd, off_t size, size_t parts, std::string_view path) {
  std::vector<off_t> begins{0};
  std::string probe(kSplitProbeBytes, '\0');
  for (size_t k = 1; k < parts; ++k) {
    off_t cut = static_cast<off_t>(static_cast<uint64_t>(size) * k / parts);
    // Byte cut - 1 being a newline makes `cut` itself a line start.
    off_t from = std::max(cut - 1, begins.back());
    ssize_t n;
    do {
      n = ::pread(fd, probe.data(), probe.size(), from);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return PosixError(errno, "cannot read", std::string(path));
    const void* nl = std::memchr(probe.data(), '\n', static_cast<size_t>(n));
    if (!nl) continue;
    off_t begin = from + (static_cast<const char*>(nl) - probe.data()) + 1;
    if (begin > begins.back() && begin < size) begins.push_back(begin);
  }
  return begins;
}

std::string ShiftMatchLine(std::string_view ndjson, uint64_t lines) {
  std::string out;
  ShiftMatchLineInto(out, ndjson, lines);
  return out;
}

void ShiftMatchLineInto(std::string& out, std::string_view ndjson, uint64_t lines) {
  // The path before it is JSON-quoted, where every '"' is escaped, so the
  // first `,"line":` is the field.
  constexpr std::string_view kKey = ",\"line\":";
  out.clear();
  size_t at = ndjson.find(kKey);
  if (at == std::string_view::npos) {
    out.append(ndjson);
    return;
  }
  at += kKey.size();
  size_t end = at;
  uint64_t n = 0;
  for (; end < ndjson.size() && ndjson[end] >= '0' && ndjson[end] <= '9'; ++end) {
    n = n * 10 + static_cast<uint64_t>(ndjson[end] - '0');
  }
  char digits[24];
  size_t d = sizeof(digits);
  for (uint64_t v = n + lines; d == sizeof(digits) || v > 0; v /= 10) {
    digits[--d] = static_cast<char>('0' + v % 10);
  }
  out.append(ndjson.substr(0, at));
  out.append(digits + d, sizeof(digits) - d);
  out.append(ndjson.substr(end));
}

Result<FileScanResult> SplitScan(FileScanner& first, int fd, std::string_view path,
                                 const FileScanner::Emit& emit, off_t size, size_t parts) {
  Result<std::vector<off_t>> begins = SplitPoints(fd, size, parts, path);
  if (!begins.ok()) return begins.status();
  if (begins->size() < 2) return first.Scan(fd, path, emit, size);
  const std::string owned_path(path);
  Split split;  // declared before any thread, so joined on every return
  for (size_t k = 0; k < begins->size(); ++k) {
    auto p = std::make_unique<Part>();
    p->range.begin = (*begins)[k];
    p->range.end = k + 1 < begins->size() ? (*begins)[k + 1] : -1;
    split.parts.push_back(std::move(p));
  }
  for (size_t k = 1; k < split.parts.size(); ++k) {
    Part& p = *split.parts[k];
    try {
      p.thread = std::thread([&split, &p, &first, fd, &owned_path, size] {
        ScanPart(split, p, first, fd, owned_path, size);
      });
    } catch (const std::system_error&) {
      // No thread: this part is scanned here in its turn.
    }
  }
  FileScanResult total;
  uint64_t base = 0;  // newlines in the parts before this one
  auto counted = [&](std::string_view line) {
    ++total.matches;
    return emit(line);
  };
  std::string shifted_line;
  auto shifted = [&](std::string_view line) {
    ShiftMatchLineInto(shifted_line, line, base);
    return counted(shifted_line);
  };
  for (size_t k = 0; k < split.parts.size(); ++k) {
    Part& p = *split.parts[k];
    Result<FileScanResult> r = p.thread.joinable()
                                   ? Drain(split, p, base, counted, first.options().cancel)
                               : k == 0 ? first.Scan(fd, path, counted, size, p.range)
                                        : first.Scan(fd, path, shifted, size, p.range);
    if (!r.ok()) return r.status();
    if (r->stopped || r->binary || r->timed_out) {
      total.stopped = r->stopped;
      total.binary = r->binary;
      total.timed_out = r->timed_out;
      return total;
    }
    base += r->lines;
  }
  total.lines = base;
  return total;
}

}  // namespace agentd
