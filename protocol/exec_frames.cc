#include "agentd/protocol/exec_frames.h"

#include <algorithm>

namespace agentd {
namespace {

void PutBigEndian(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetBigEndian(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(in[at + i]);
  return v;
}

// The payload length a header announces, or an error for a frame this
// reader must not hold (checked before any of its payload is kept).
Result<size_t> PayloadLength(std::string_view header) {
  uint64_t length = GetBigEndian(header, 4, 4);
  auto kind = static_cast<ExecFrameKind>(header[0]);
  if (length > kMaxExecFramePayloadBytes ||
      (kind == ExecFrameKind::kOutput && length > kMaxExecFrameOutputBytes)) {
    return Status::Error(ErrorCode::kProtocolError, "event frame longer than allowed")
        .With("length", length)
        .With("limit", kind == ExecFrameKind::kOutput ? kMaxExecFrameOutputBytes
                                                      : kMaxExecFramePayloadBytes);
  }
  if (kind == ExecFrameKind::kGap && length != 8) {
    return Status::Error(ErrorCode::kProtocolError, "bad gap frame").With("length", length);
  }
  return static_cast<size_t>(length);
}

}  // namespace

void AppendExecFrameHeader(std::string& out, ExecFrameKind kind, uint8_t stream, uint32_t length,
                           uint64_t offset) {
  out.push_back(static_cast<char>(kind));
  out.push_back(static_cast<char>(stream));
  out.append(2, '\0');
  PutBigEndian(out, length, 4);
  PutBigEndian(out, offset, 8);
}

void AppendExecGapFrame(std::string& out, uint8_t stream, uint64_t from, uint64_t to) {
  AppendExecFrameHeader(out, ExecFrameKind::kGap, stream, 8, from);
  PutBigEndian(out, to, 8);
}

Result<bool> ExecFrameDecoder::Next(std::string_view& bytes, std::string_view* frame) {
  if (consumed_) {
    buf_.clear();
    consumed_ = false;
  }
  if (buf_.empty() && bytes.size() >= kExecFrameHeaderBytes) {
    // The common case: a whole frame in the bytes at hand, viewed, not copied.
    Result<size_t> length = PayloadLength(bytes);
    if (!length.ok()) return length.status();
    if (bytes.size() >= kExecFrameHeaderBytes + *length) {
      *frame = bytes.substr(0, kExecFrameHeaderBytes + *length);
      bytes.remove_prefix(frame->size());
      return true;
    }
  }
  if (buf_.size() < kExecFrameHeaderBytes) {
    size_t take = std::min(kExecFrameHeaderBytes - buf_.size(), bytes.size());
    buf_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (buf_.size() < kExecFrameHeaderBytes) return false;
  }
  Result<size_t> length = PayloadLength(buf_);
  if (!length.ok()) return length.status();
  size_t take = std::min(kExecFrameHeaderBytes + *length - buf_.size(), bytes.size());
  buf_.append(bytes.substr(0, take));
  bytes.remove_prefix(take);
  if (buf_.size() < kExecFrameHeaderBytes + *length) return false;
  *frame = buf_;
  consumed_ = true;
  return true;
}

ExecFrame ExecFrameDecoder::Decode(std::string_view frame) {
  return ExecFrame{static_cast<uint8_t>(frame[0]), static_cast<uint8_t>(frame[1]),
                   GetBigEndian(frame, 8, 8), frame.substr(kExecFrameHeaderBytes)};
}

}  // namespace agentd
