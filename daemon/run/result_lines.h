// ResultLines: a run's stdout with its result lines taken out
// (docs/PROTOCOL.md, "Run code", "result_marker"). A line that starts with
// the marker carries the run's result as JSON; it is removed from the
// stdout the answer carries, and the last one is the result. The stream is
// fed in whatever pieces it was read in: a marker or a result line split
// across writes (or reads) is put back together here, never assumed
// whole. Everything else passes through into the answer's head-and-tail
// form (RunAnswerText's bounds). Bounded: a result line is kept up to
// kRunResultLineBytes. One thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "agentd/protocol/json.h"

namespace agentd {

// A result line (marker included) longer than this is result_error.
inline constexpr size_t kRunResultLineBytes = 1 << 20;

class ResultLines {
 public:
  // `skipped`: stream bytes before the first fed byte (no longer retained);
  // `marker` non-empty.
  ResultLines(std::string marker, uint64_t skipped);

  void Feed(std::string_view bytes);
  // Ends the stream (a last line without a newline still counts).
  void Finish();

  // The stdout of the answer: whole up to kRunOutputBytes, else head,
  // omitted marker and tail; *cut when bytes are left out.
  std::string Text(bool* cut) const;
  bool found() const { return found_; }
  // The last result line's value, or why it is not one.
  const std::optional<json::Value>& result() const { return result_; }
  const std::optional<std::string>& error() const { return error_; }

 private:
  void Emit(std::string_view bytes);
  void EndResultLine();

  enum class State { kLineStart, kPassing, kResult };
  std::string marker_;
  uint64_t skipped_;
  State state_ = State::kLineStart;
  std::string pending_;  // a line start shorter than the marker, or the result line
  uint64_t result_bytes_ = 0;
  bool found_ = false;
  std::optional<json::Value> result_;
  std::optional<std::string> error_;
  // The output that stays: its first kRunHeadBytes, and a window of its
  // last bytes, and its length.
  std::string head_;
  std::string tail_;
  uint64_t emitted_ = 0;
};

}  // namespace agentd
