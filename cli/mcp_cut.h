// The bound on every tool result (agentctl mcp --max-result-bytes): one
// call cannot flood a model's context. The text content and the structured
// content are each cut to the bound, and every cut says so: a marker line
// in the text, a "cut" member in the structured content naming each field
// that was shortened and how long it was.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "agentd/protocol/json.h"

namespace agentd::cli::mcp {

// The smallest bound accepted: room for a marker and an error.
inline constexpr size_t kMinResultBytes = 1024;

// `text` cut to at most `max` bytes (on a UTF-8 boundary) with a marker
// naming the cut; unchanged when it fits.
std::string CutText(std::string text, size_t max);

// Cuts the largest strings and arrays of `doc` until its serialized form
// fits in `max` bytes; the cuts are recorded in doc["cut"].
void CutStructured(json::Object& doc, size_t max);

// Keeps the head and the tail of a stream of bytes within a budget and
// counts what it dropped in between (command output: the start says what
// ran, the end says how it failed).
class HeadTail {
 public:
  explicit HeadTail(size_t budget) : half_(budget / 2) {}
  void Add(std::string_view bytes);
  uint64_t total() const { return total_; }
  bool cut() const { return total_ > head_.size() + tail_.size(); }
  // Head, an "omitted" marker when bytes were dropped, tail.
  std::string Text() const;

 private:
  size_t half_;
  uint64_t total_ = 0;
  std::string head_;
  std::string tail_;
};

}  // namespace agentd::cli::mcp
