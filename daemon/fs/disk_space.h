// Free space, and the insufficient_storage refusal that reports it.
#pragma once

#include <cstdint>
#include <string>

#include "agentd/protocol/status.h"

namespace agentd {

// Bytes an unprivileged writer can still allocate on the file system of
// `fd` (statvfs f_bavail * f_frsize).
Result<uint64_t> AvailableBytes(int fd, const std::string& display);

// 507 insufficient_storage with `needed` and `available` in bytes.
Status InsufficientStorage(uint64_t needed, uint64_t available, const std::string& display);

// The refusal for an ENOSPC/EDQUOT met while writing: `needed` as known to
// the caller, `available` measured now on `fd`.
Status NoSpaceWhileWriting(int fd, uint64_t needed, const std::string& display);

}  // namespace agentd
