// The next tenant's token where --token-file cannot take it.
//
// A reset with `next` replaces the token file, so that a restart never
// revives the previous tenant's token. A token file that is a Docker
// secret or a Kubernetes Secret volume cannot be replaced (a read-only
// file system, or a bind mount that rename(2) cannot cover), and every
// reset of such a guest would fail. There the daemon keeps the token in
// its state directory instead, with the identity (device, inode, size,
// mtime) the token file had when the token was rotated. At start the kept
// token wins only while the file is unchanged: an operator who writes a
// new token into the file (or a Secret that is updated) still wins.
// Blocking file I/O: the blocking pool, or before serving.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "agentd/protocol/status.h"

namespace agentd {

// Where `state_dir` keeps the record.
std::string RotatedTokenPath(const std::string& state_dir);

// The record's contents for `token` against `token_file`'s identity now;
// an error when the file cannot be stat'ed.
Result<std::string> RotatedTokenRecord(const std::string& token_file, std::string_view token);

// Writes `token` into `state_dir`'s record for `token_file` (mode 0600,
// atomically, flushed before the rename).
Status KeepRotatedToken(const std::string& state_dir, const std::string& token_file,
                        std::string_view token);

// Removes the record (the token file took the token itself).
void ForgetRotatedToken(const std::string& state_dir);

// The kept token when the record names `token_file` and the file is as it
// was when the token was kept; else nullopt, and a stale record is removed.
std::optional<std::string> LoadRotatedToken(const std::string& state_dir,
                                            const std::string& token_file);

}  // namespace agentd
