// Reads a small file whole (configuration such as /etc/passwd, an exec's
// metadata). Errors come from PosixError; a file over `limit` bytes is
// payload_too_large. Any thread.
#pragma once

#include <string>
#include <string_view>

#include "agentd/protocol/status.h"

namespace agentd {

Result<std::string> ReadFileToString(const std::string& path, size_t limit);

// Writes `data` to `path` atomically: a temporary file beside it, fsync,
// rename over the target. Mode 0600. Any thread.
Status WriteFileAtomically(const std::string& path, std::string_view data);

}  // namespace agentd
