#include "agentd/trees/disk_space.h"

#include <sys/statvfs.h>

#include <cerrno>

#include "agentd/trees/posix_error.h"

namespace agentd {

Result<uint64_t> AvailableBytes(int fd, const std::string& display) {
  struct statvfs vfs;
  if (::fstatvfs(fd, &vfs) != 0) return PosixError(errno, "cannot measure free space at", display);
  return static_cast<uint64_t>(vfs.f_bavail) * static_cast<uint64_t>(vfs.f_frsize);
}

Status InsufficientStorage(uint64_t needed, uint64_t available, const std::string& display) {
  return Status::Error(ErrorCode::kInsufficientStorage,
                       "writing " + display + " needs " + std::to_string(needed) +
                           " bytes but only " + std::to_string(available) + " are available")
      .With("path", display)
      .With("needed", needed)
      .With("available", available);
}

Status NoSpaceWhileWriting(int fd, uint64_t needed, const std::string& display) {
  Result<uint64_t> available = AvailableBytes(fd, display);
  return InsufficientStorage(needed, available.ok() ? *available : 0, display);
}

Status WithSpaceNumbers(Status s, int fd, uint64_t needed) {
  if (s.code() != ErrorCode::kInsufficientStorage || s.details().Find("needed")) return s;
  Result<uint64_t> available = AvailableBytes(fd, "");
  s.With("needed", needed);
  s.With("available", available.ok() ? *available : 0);
  return s;
}

}  // namespace agentd
