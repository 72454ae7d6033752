// The `user` and `group` parameters of the file, mkdir and tar routes,
// resolved to the uid and gid a created file gets (fs/ownership.h). It sits
// in api/ because it joins two layers that must not see each other: the
// guest's user database (proc/) and the file operations (fs/).
#pragma once

#include <optional>
#include <string>

#include "agentd/protocol/status.h"
#include "agentd/trees/ownership.h"
#include "proc/user_db.h"

namespace agentd {

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

}  // namespace agentd
