// The one place where errno becomes a Status (style: "convert at the edges,
// once"). The code follows the errno (ENOENT -> not_found, ENOSPC ->
// insufficient_storage, ...); the message names the operation and, when
// given, the path, which is also put in the details.
#pragma once

#include <string>
#include <string_view>

#include "agentd/protocol/status.h"

namespace agentd {

ErrorCode ErrorCodeForErrno(int err);
Status PosixError(int err, std::string_view operation, std::string_view path = {});

}  // namespace agentd
