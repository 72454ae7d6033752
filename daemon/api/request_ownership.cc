#include "api/request_ownership.h"

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

}  // namespace agentd
