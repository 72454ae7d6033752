// SplitScan: one large file scanned as several parts on as many threads,
// with the answer of one thread scanning it whole (docs/PROTOCOL.md,
// "Search"). A single 1 GiB log would otherwise keep one core busy while
// the other idles.
//
// The file is cut at line starts (SplitPoints). The calling thread scans
// the first part and emits its matches at once; each further part is
// scanned on a thread of its own into a buffer, its line numbers counted
// from the part's first line. Once every earlier part is done, the count
// of newlines in those parts is known and each buffered match's line
// number is raised by it (ShiftMatchLine) as it is emitted. So the matches
// come in file order, the caller's bounds (results, bytes) cut them at
// exactly the same match, and context lines cross the cuts (a part reads
// before and after itself for them). Binary detection stays the first
// block's; a part that fails, finds a line too long or runs out of time
// ends the file there, after the matches before it, as one thread would.
//
// Memory is bounded: a part holds at most kSplitHeldBytes of matches not
// yet emitted, then its thread waits (the part being emitted never waits
// on a later one, so this cannot deadlock).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "search/file_scanner.h"

namespace agentd {

inline constexpr size_t kSplitHeldBytes = 4 << 20;
// How far past a nominal cut the next line start is looked for; a cut
// inside a longer line is dropped (one part fewer).
inline constexpr size_t kSplitProbeBytes = 64 * 1024;

// Where each part of a `size`-byte file begins (the first at 0): the line
// start at or after each k * size / parts. Strictly increasing, each below
// `size`. Errors: a read that fails.
Result<std::vector<off_t>> SplitPoints(int fd, off_t size, size_t parts, std::string_view path);

// A match's NDJSON line (FileScanner's encoding) with its "line" raised by
// `lines`.
std::string ShiftMatchLine(std::string_view ndjson, uint64_t lines);
// The same into `out` (its buffer reused: no allocation per line).
void ShiftMatchLineInto(std::string& out, std::string_view ndjson, uint64_t lines);

// Scans `fd` (a regular file of `size` bytes, as stat'ed) in up to `parts`
// parts, `first` scanning the first on this thread and the others on new
// threads (made with `first`'s matcher and options; a part whose thread
// cannot be made is scanned here in its turn). Answers as first.Scan would
// for the whole file, except `matches`, which counts the matches emitted.
Result<FileScanResult> SplitScan(FileScanner& first, int fd, std::string_view path,
                                 const FileScanner::Emit& emit, off_t size, size_t parts);

}  // namespace agentd
