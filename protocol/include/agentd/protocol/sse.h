// Server-Sent Events framing (docs/PROTOCOL.md, "Stream").
//
// The writer puts the `id:` line last in every event, right before the
// blank line, so a client that adopts ids as it reads them can never resume
// past bytes of an event it did not receive whole. The decoder follows the
// WHATWG event-stream rules (LF, CRLF or CR line ends; `data:` lines joined
// with LF; comments ignored) and is incremental: feeding a stream split at
// any byte boundary yields the same events as feeding it whole.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace agentd {

struct SseEvent {
  std::string event;  // "message" when the stream gave no event field
  std::string data;
  std::string id;  // the last event id in effect when this event ended
};

// Appends one event. `data` must not contain line breaks (ours is one line
// of JSON).
// The same event in two halves, for data the caller appends to `out`
// itself between them (no copy); that data must hold no line break.
void AppendSseEventStart(std::string& out, std::string_view event);
void AppendSseEventEnd(std::string& out, std::string_view id);
void AppendSseEvent(std::string& out, std::string_view event, std::string_view data,
                    std::string_view id);
// Appends a comment line (": text") and the blank line that ends it.
void AppendSseComment(std::string& out, std::string_view text);

class SseDecoder {
 public:
  // Bounds one line; a longer line is an error (Feed returns false).
  static constexpr size_t kMaxLineBytes = 16 * 1024 * 1024;

  using Sink = std::function<void(SseEvent&&)>;
  explicit SseDecoder(Sink sink) : sink_(std::move(sink)) {}

  // Consumes bytes; calls the sink for every event completed by them.
  // Returns false when a line exceeds kMaxLineBytes (the stream is unusable).
  bool Feed(std::string_view bytes);
  const std::string& last_event_id() const { return last_id_; }

 private:
  void Line(std::string_view line);
  void Dispatch();

  Sink sink_;
  std::string line_;
  bool skip_lf_ = false;  // a CR ended the previous line; a following LF belongs to it
  std::string event_;
  std::string data_;
  bool has_data_ = false;
  std::string last_id_;
};

}  // namespace agentd
