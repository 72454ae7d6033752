// Binary framing of GET /v1/execs/{id}/events (docs/PROTOCOL.md, "Frames"),
// chosen with `Accept: application/vnd.agentd.frames`: the same events as the
// SSE form, with output as raw bytes instead of base64 in JSON, so a client
// in a language with a slow base64 decoder reads at the raw route's rate.
//
// A frame is a 16-byte header, big-endian, then `length` payload bytes:
//   byte 0     kind (ExecFrameKind)
//   byte 1     stream: 1 stdout, 2 stderr (output and gap frames), else 0
//   bytes 2-3  zero
//   bytes 4-7  u32 payload length
//   bytes 8-15 u64 offset: the first payload byte's (output), `from` (gap), else 0
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "agentd/protocol/status.h"

namespace agentd {

inline constexpr std::string_view kExecFramesMediaType = "application/vnd.agentd.frames";
inline constexpr size_t kExecFrameHeaderBytes = 16;
// An output frame carries at most this much (the SSE route's event bound).
inline constexpr uint32_t kMaxExecFrameOutputBytes = 128 * 1024;
// Any frame's payload (the exit frame's exec object is the only larger one).
inline constexpr uint32_t kMaxExecFramePayloadBytes = 1024 * 1024;

enum class ExecFrameKind : uint8_t { kOutput = 1, kGap = 2, kExit = 3, kKeepalive = 4 };

// Appends a frame header; the caller appends `length` payload bytes.
void AppendExecFrameHeader(std::string& out, ExecFrameKind kind, uint8_t stream, uint32_t length,
                           uint64_t offset);
// A gap frame whole: its payload is the u64 `to`.
void AppendExecGapFrame(std::string& out, uint8_t stream, uint64_t from, uint64_t to);

struct ExecFrame {
  uint8_t kind;  // an ExecFrameKind, or one this reader does not know (skip it)
  uint8_t stream;
  uint64_t offset;
  std::string_view payload;  // valid during the sink call only
};

// Incremental reader: a stream split at any byte gives the same frames.
// Refuses (protocol_error) a length over kMaxExecFramePayloadBytes before
// holding any of it, an output frame over kMaxExecFrameOutputBytes, and a
// malformed gap frame.
class ExecFrameDecoder {
 public:
  template <typename Sink>
  Status Feed(std::string_view bytes, Sink&& sink) {
    for (;;) {
      std::string_view frame;
      Result<bool> got = Next(bytes, &frame);
      if (!got.ok()) return got.status();
      if (!*got) return Status::Ok();
      sink(Decode(frame));
    }
  }

 private:
  // Takes bytes until a whole frame is at hand (in `frame`, which views
  // either `bytes` or the decoder's buffer); false when `bytes` ran out.
  Result<bool> Next(std::string_view& bytes, std::string_view* frame);
  static ExecFrame Decode(std::string_view frame);

  std::string buf_;
  bool consumed_ = false;  // buf_ held the frame handed out last
};

}  // namespace agentd
