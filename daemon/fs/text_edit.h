// The text changes of POST /v1/fs/edit (docs/PROTOCOL.md, "Edit"), on a
// file's bytes in memory. Pure; any thread.
//
// Line edits come first, against the lines as read (1-based, inclusive;
// their ranges may not overlap); then the text edits in order, each on the
// text the ones before it left. A text edit's `old` must occur exactly
// `count` times (non-overlapping, left to right); every occurrence is
// replaced. Any edit that does not fit is 409 edit_mismatch naming it, and
// nothing is applied.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/protocol/edit.h"
#include "agentd/protocol/status.h"

namespace agentd {

// At most this many line numbers are listed in an edit_mismatch.
inline constexpr size_t kMaxMismatchLines = 100;

struct Occurrences {
  std::vector<size_t> offsets;  // byte offsets, ascending, non-overlapping
  std::vector<uint64_t> lines;  // the 1-based line of each
};

// Every non-overlapping occurrence of `needle` (not empty) in `text`.
Occurrences FindOccurrences(std::string_view text, std::string_view needle);

// The lines of `text` (each with its "\n"; the bytes after the last "\n"
// are one more line).
std::vector<std::string_view> SplitLines(std::string_view text);

// `text` with every edit applied, or 409 edit_mismatch (details: "edit" or
// "line_edit" with the index, "found", "count", "lines").
Result<std::string> ApplyEdits(std::string_view text, const std::vector<TextEdit>& edits,
                               const std::vector<LineEdit>& line_edits);

}  // namespace agentd
