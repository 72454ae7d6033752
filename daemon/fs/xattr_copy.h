// Extended attributes carried from a file to the one replacing it (an
// atomic write or an edit keeps the replaced file's user.* attributes,
// POSIX ACLs and, where the daemon may set them, security labels).
#pragma once

#include <string>

#include "agentd/protocol/status.h"

namespace agentd {

// Copies every extended attribute of `from_fd` onto `to_fd` (both open
// regular files). Attributes this process may not read or set (trusted.*
// without CAP_SYS_ADMIN, a label the policy refuses) and file systems
// without xattrs are skipped: the copy never fails a write for them.
// Other errors (ENOSPC, EIO) are returned naming `display`.
Status CopyXattrs(int from_fd, int to_fd, const std::string& display);

}  // namespace agentd
