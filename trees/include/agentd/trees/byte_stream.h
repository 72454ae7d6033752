// ByteSource and ByteSink: how the blocking tar and file code reads a
// request body and writes a response body without knowing about sockets
// (the daemon connects them to a ByteChannel; tests to memory).
#pragma once

#include <string>
#include <string_view>

#include "agentd/protocol/status.h"

namespace agentd {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // The next bytes, valid until the next call; empty at the end of the
  // stream. An error means the stream broke (the client went away).
  virtual Result<std::string_view> Read() = 0;
};

class ByteSink {
 public:
  virtual ~ByteSink() = default;
  // Blocks until the bytes are accepted. An error means the reader is gone.
  virtual Status Write(std::string_view bytes) = 0;
  // The same for a whole buffer the writer gives up: a sink that queues
  // buffers keeps it as it is, without a copy.
  virtual Status WriteOwned(std::string&& bytes) { return Write(bytes); }
  // A buffer to fill for the next WriteOwned: one the reader is done with
  // (its bytes stale, its size what it last held), or an empty string.
  virtual std::string TakeBuffer() { return std::string(); }
};

}  // namespace agentd
