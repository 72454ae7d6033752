// Ownership requested for created files and directories (the `user` and
// `group` parameters of the file, mkdir and tar routes, resolved from names
// by api/request_ownership.h).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "agentd/protocol/status.h"

namespace agentd {

struct Ownership {
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;

  bool any() const { return uid.has_value() || gid.has_value(); }
  // Arguments for fchown(2): -1 leaves a part unchanged.
  uid_t uid_or_keep() const { return uid.value_or(static_cast<uid_t>(-1)); }
  gid_t gid_or_keep() const { return gid.value_or(static_cast<gid_t>(-1)); }
};

// fchown(fd) when anything was asked; errors name `display`.
Status ApplyOwnership(int fd, const Ownership& owner, const std::string& display);

}  // namespace agentd
