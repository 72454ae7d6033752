// ByteSource and ByteSink: how the blocking tar and file code reads a
// request body and writes a response body without knowing about sockets
// (the daemon connects them to a ByteChannel; tests to memory).
#pragma once

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
};

}  // namespace agentd
