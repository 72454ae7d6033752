#include "fs/ownership.h"

#include <unistd.h>

#include <cerrno>

#include "sys/passwd.h"
#include "sys/posix_error.h"

namespace agentd {

Result<Ownership> ResolveOwnership(const std::optional<std::string>& user,
                                   const std::optional<std::string>& group,
                                   const std::string& passwd_path, const std::string& group_path) {
  Ownership out;
  if (user) {
    std::optional<PasswdEntry> entry = LookupUser(*user, passwd_path);
    if (!entry) {
      return Status::Error(ErrorCode::kUnknownUser, "no user \"" + *user + "\" in " + passwd_path)
          .With("field", "user")
          .With("user", *user);
    }
    out.uid = entry->uid;
    if (entry->gid != static_cast<gid_t>(-1)) out.gid = entry->gid;
  }
  if (group) {
    std::optional<GroupEntry> entry = LookupGroup(*group, group_path);
    if (!entry) {
      return Status::Error(ErrorCode::kUnknownGroup, "no group \"" + *group + "\" in " + group_path)
          .With("field", "group")
          .With("group", *group);
    }
    out.gid = entry->gid;
  }
  return out;
}

Status ApplyOwnership(int fd, const Ownership& owner, const std::string& display) {
  if (!owner.any()) return Status::Ok();
  if (::fchown(fd, owner.uid_or_keep(), owner.gid_or_keep()) != 0) {
    return PosixError(errno, "cannot change the owner of", display);
  }
  return Status::Ok();
}

}  // namespace agentd
