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

// An insufficient_storage Status from a plain errno (ENOSPC on creating a
// file: no inodes left) lacks the numbers the protocol promises; this adds
// `needed` and `available` (measured now on `fd`) when they are missing.
// Any other Status passes through.
Status WithSpaceNumbers(Status s, int fd, uint64_t needed);

}  // namespace agentd
