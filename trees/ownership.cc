#include "agentd/trees/ownership.h"

#include <unistd.h>

#include <cerrno>

#include "agentd/trees/posix_error.h"

namespace agentd {

Status ApplyOwnership(int fd, const Ownership& owner, const std::string& display) {
  if (!owner.any()) return Status::Ok();
  if (::fchown(fd, owner.uid_or_keep(), owner.gid_or_keep()) != 0) {
    return PosixError(errno, "cannot change the owner of", display);
  }
  return Status::Ok();
}

}  // namespace agentd
