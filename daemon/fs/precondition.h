// Preconditions of the writing file routes (docs/PROTOCOL.md, "ETags and
// preconditions"): If-Match and If-None-Match: * on PUT /v1/fs/file,
// DELETE /v1/fs, POST /v1/fs/rename and POST /v1/fs/edit.
//
// A check reads the directory entry as it is at that moment; callers hold
// FileTags::Lock of the entry across the check and their replace, unlink
// or rename, so among the daemon's own writers "check, then replace" is one
// step. A guest process writing the file directly is not held back by that
// lock: the check is as close to the rename as the file system allows, not
// atomic with it.
#pragma once

#include <string>
#include <vector>

#include "agentd/protocol/status.h"
#include "fs/file_tags.h"

namespace agentd {

struct Precondition {
  // Opaque tags as sent, quotes removed; "*" matches any existing entry.
  // Weak tags (W/"...") are kept with their prefix and never match.
  std::vector<std::string> if_match;
  bool if_none_match = false;  // If-None-Match: * (create only)

  bool empty() const { return if_match.empty() && !if_none_match; }
};

// Most tags one If-Match may list.
inline constexpr size_t kMaxIfMatchTags = 16;

// The headers' values (nullptr: absent). A malformed If-Match, or an
// If-None-Match other than "*", is 400 invalid_request naming the header.
// A bare tag without quotes is taken as if quoted.
Result<Precondition> ParsePrecondition(const std::string* if_match,
                                       const std::string* if_none_match);

// True when `tag` (as ETag answers it, quoted) is one If-Match lists.
bool IfMatchAccepts(const Precondition& pre, const std::string& tag);

// Checks `pre` against the entry `leaf` of directory `dir_fd` now; a final
// symlink is not followed (it is not a regular file). A failure is 412
// precondition_failed with details "path", "exists" and "etag" (the
// current tag of a regular file, else null).
Status CheckPrecondition(const Precondition& pre, int dir_fd, const std::string& leaf,
                         FileTags& tags, const std::string& display);

// What a guarded change carries down to the file operations.
struct Guard {
  FileTags& tags;
  const Precondition& pre;
};

}  // namespace agentd
