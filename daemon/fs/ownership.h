// Ownership requested for created files and directories (the `user` and
// `group` parameters of the file, mkdir and tar routes).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "agentd/protocol/status.h"
#include "proc/user_db.h"

namespace agentd {

struct Ownership {
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;

  bool any() const { return uid.has_value() || gid.has_value(); }
  // Arguments for fchown(2): -1 leaves a part unchanged.
  uid_t uid_or_keep() const { return uid.value_or(static_cast<uid_t>(-1)); }
  gid_t gid_or_keep() const { return gid.value_or(static_cast<gid_t>(-1)); }
};

// Resolves names or numbers with the exec engine's reading of the guest's
// /etc/passwd and /etc/group (proc/user_db.h), so a file and a process
// asked to belong to "agent" agree: `user` without `group` also sets the
// group to the user's primary group (a number with no passwd entry: the same
// number); `group` alone changes only the group. Unknown names: 400
// unknown_user / unknown_group naming the field.
Result<Ownership> ResolveOwnership(const std::optional<std::string>& user,
                                   const std::optional<std::string>& group, const UserDb& db);
// The same against the guest's own files (read only when a name was given).
Result<Ownership> ResolveOwnership(const std::optional<std::string>& user,
                                   const std::optional<std::string>& group);

// fchown(fd) when anything was asked; errors name `display`.
Status ApplyOwnership(int fd, const Ownership& owner, const std::string& display);

}  // namespace agentd
