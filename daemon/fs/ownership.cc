#include "fs/ownership.h"

#include <unistd.h>

#include <cerrno>

#include "sys/posix_error.h"

namespace agentd {

Result<Ownership> ResolveOwnership(const std::optional<std::string>& user,
                                   const std::optional<std::string>& group, const UserDb& db) {
  Result<std::optional<Credentials>> creds = ResolveCredentials(user, group, db);
  if (!creds.ok()) return creds.status();
  Ownership out;
  if (*creds) {
    out.uid = (*creds)->uid;
    out.gid = (*creds)->gid;
  }
  return out;
}

Result<Ownership> ResolveOwnership(const std::optional<std::string>& user,
                                   const std::optional<std::string>& group) {
  if (!user && !group) return Ownership{};
  return ResolveOwnership(user, group, LoadUserDb());
}

Status ApplyOwnership(int fd, const Ownership& owner, const std::string& display) {
  if (!owner.any()) return Status::Ok();
  if (::fchown(fd, owner.uid_or_keep(), owner.gid_or_keep()) != 0) {
    return PosixError(errno, "cannot change the owner of", display);
  }
  return Status::Ok();
}

}  // namespace agentd
