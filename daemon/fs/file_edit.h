// EditFile: POST /v1/fs/edit on the disk (docs/PROTOCOL.md, "Edit"). Reads
// the file (confined, at most kMaxEditFileBytes), checks the request's
// precondition against the tag of the bytes read, applies the edits in
// memory (fs/text_edit.h) and replaces the file through AtomicFile with
// If-Match set to that same tag, so the replace happens only if the file
// still holds the bytes the edits were applied to: a write that landed
// in between makes the edit 412 and leaves the other write in place.
// Mode, owner and extended attributes carry over (fs/atomic_file.h).
//
// Blocking; call on a pool.
#pragma once

#include "agentd/protocol/edit.h"
#include "fs/confined_root.h"
#include "fs/file_tags.h"
#include "fs/lexical_path.h"
#include "fs/precondition.h"

namespace agentd {

Result<EditResponse> EditFile(const ConfinedRoot& root, const RelPath& rel, const EditRequest& req,
                              const Precondition& pre, FileTags& tags);

}  // namespace agentd
