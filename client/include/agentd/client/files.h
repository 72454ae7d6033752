// File types of the client library (docs/CLIENT.md, "Files"). The wire
// types (FileStat, ListResponse, MkdirRequest, ...) come from
// agentd/protocol/fs.h.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "agentd/protocol/edit.h"
#include "agentd/protocol/fs.h"

namespace agentd::client {

struct ReadOptions {
  // 1-based inclusive lines (docs/PROTOCOL.md, "Read"); end absent: to EOF.
  std::optional<uint64_t> start_line;
  std::optional<uint64_t> end_line;
  // A byte range [first, last] (last absent: to the end), sent as Range.
  std::optional<uint64_t> first_byte;
  std::optional<uint64_t> last_byte;
  // ReadFile refuses answers larger than this (use ReadFileTo to stream).
  size_t max_bytes = 256u << 20;
};

// Preconditions of a write, edit, rename or delete (docs/PROTOCOL.md,
// "ETags and preconditions"). One that does not hold is precondition_failed
// (412) and nothing changes.
struct Preconditions {
  // The target must be a regular file with this ETag (from Stat or
  // ReadFileWithEtag), or exist at all for "*".
  std::optional<std::string> if_match;
  // The target must not exist (create only). Rename: applies to the `to`.
  bool if_none_match = false;
};

// A file's bytes with the ETag of exactly those bytes (absent where the
// daemon has none, e.g. on procfs).
struct TaggedContent {
  std::string data;
  std::optional<std::string> etag;
};

struct WriteOptions {
  std::optional<uint32_t> mode;  // exactly this mode (e.g. 0755); absent: 0644 / kept
  bool parents = false;          // create missing directories
  std::optional<std::string> user;
  std::optional<std::string> group;
  // A guarded write is never retried blindly: its own first attempt would
  // have changed the tag it checks.
  Preconditions guard;
  // false: the answer carries no `etag` and the daemon spends no time
  // hashing the upload (PUT /v1/fs/file?etag=0); Stat or ReadFileWithEtag
  // hash the file later, when asked. The guard is checked all the same.
  bool etag = true;
};

// Receives a file's bytes as they arrive; a non-ok Status stops the read.
using ByteSink = std::function<Status(std::string_view bytes)>;
// Produces a file's bytes: the next chunk, empty at the end.
using ByteSource = std::function<Result<std::string_view>()>;
// Hears how many more bytes a transfer moved (a progress display).
using ByteCounter = std::function<void(uint64_t bytes)>;

}  // namespace agentd::client
