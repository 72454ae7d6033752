#include "fs/text_edit.h"

#include <algorithm>

namespace agentd {
namespace {

Status Mismatch(std::string message) {
  return Status::Error(ErrorCode::kEditMismatch, std::move(message));
}

json::Array Numbers(const std::vector<uint64_t>& lines) {
  json::Array out;
  for (size_t i = 0; i < lines.size() && i < kMaxMismatchLines; ++i) out.push_back(lines[i]);
  return out;
}

// The line edits, last first so the earlier line numbers stay valid.
Result<std::string> ApplyLineEdits(std::string_view text, const std::vector<LineEdit>& edits) {
  std::vector<std::string_view> lines = SplitLines(text);
  std::vector<size_t> order(edits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return edits[a].start_line < edits[b].start_line; });
  for (size_t k = 0; k < order.size(); ++k) {
    const LineEdit& e = edits[order[k]];
    // end_line == start_line - 1 inserts before start_line.
    bool fits = e.start_line >= 1 && e.end_line + 1 >= e.start_line && e.end_line <= lines.size() &&
                e.start_line <= lines.size() + 1;
    if (!fits) {
      return std::move(Mismatch("line edit " + std::to_string(order[k]) + " names lines " +
                                std::to_string(e.start_line) + ".." + std::to_string(e.end_line) +
                                " of a file of " + std::to_string(lines.size()) + " lines")
                           .With("line_edit", order[k])
                           .With("lines", lines.size()));
    }
    if (k > 0 && edits[order[k - 1]].end_line >= e.start_line) {
      return std::move(Status::InvalidRequest("line edits " + std::to_string(order[k - 1]) +
                                              " and " + std::to_string(order[k]) + " overlap")
                           .With("field", "line_edits"));
    }
  }
  std::string out;
  out.reserve(text.size());
  uint64_t next = 1;  // the first line not yet copied
  for (size_t idx : order) {
    const LineEdit& e = edits[idx];
    for (; next < e.start_line; ++next) out.append(lines[next - 1]);
    bool replaced_had_newline = true;
    for (; next <= e.end_line; ++next) replaced_had_newline = lines[next - 1].ends_with('\n');
    out.append(e.text);
    bool at_end = next > lines.size();
    if (!e.text.empty() && !e.text.ends_with('\n') && (replaced_had_newline || !at_end)) {
      out += '\n';
    }
  }
  for (; next <= lines.size(); ++next) out.append(lines[next - 1]);
  return out;
}

}  // namespace

Occurrences FindOccurrences(std::string_view text, std::string_view needle) {
  Occurrences found;
  if (needle.empty()) return found;
  uint64_t line = 1;
  size_t counted_to = 0;  // line holds the line number at this offset
  for (size_t at = text.find(needle); at != std::string_view::npos;
       at = text.find(needle, at + needle.size())) {
    line += static_cast<uint64_t>(std::count(text.begin() + static_cast<ptrdiff_t>(counted_to),
                                             text.begin() + static_cast<ptrdiff_t>(at), '\n'));
    counted_to = at;
    found.offsets.push_back(at);
    found.lines.push_back(line);
  }
  return found;
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    size_t len = nl == std::string_view::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(0, len));
    text.remove_prefix(len);
  }
  return lines;
}

Result<std::string> ApplyEdits(std::string_view text, const std::vector<TextEdit>& edits,
                               const std::vector<LineEdit>& line_edits) {
  Result<std::string> current = ApplyLineEdits(text, line_edits);
  if (!current.ok()) return current.status();
  std::string out = std::move(*current);
  for (size_t i = 0; i < edits.size(); ++i) {
    const TextEdit& e = edits[i];
    Occurrences found = FindOccurrences(out, e.old_text);
    if (found.offsets.size() != e.count) {
      return std::move(Mismatch("edit " + std::to_string(i) + ": the old text occurs " +
                                std::to_string(found.offsets.size()) + " times, not " +
                                std::to_string(e.count))
                           .With("edit", i)
                           .With("found", found.offsets.size())
                           .With("count", e.count)
                           .With("lines", Numbers(found.lines)));
    }
    std::string next;
    next.reserve(out.size() + e.count * e.new_text.size());
    size_t copied = 0;
    for (size_t at : found.offsets) {
      next.append(out, copied, at - copied);
      next.append(e.new_text);
      copied = at + e.old_text.size();
    }
    next.append(out, copied, std::string::npos);
    out = std::move(next);
  }
  return out;
}

}  // namespace agentd
