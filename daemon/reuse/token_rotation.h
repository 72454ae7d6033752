// The next tenant's token on its way to the disk in a reset with
// --token-file (docs/PROTOCOL.md, "Reuse", step 1), in two steps:
//
// - Stage, before the reset changes anything: the token is written into a
//   temporary beside --token-file, or beside the state dir's record where
//   the file's directory cannot take it (a read-only Secret volume) or an
//   earlier rotation found the file unreplaceable (auth/rotated_token.h).
//   Neither place changes yet. Creating and writing the temporary is what
//   fails on a read-only or missing directory or a full disk, so a reset
//   that cannot rotate its token is refused with nothing changed.
// - Commit, while the generation's processes die: the temporary is
//   flushed and renamed into place. Its fsync (milliseconds on a disk
//   with other writes pending) then overlaps the kernel's teardown of the
//   processes instead of preceding it (docs/BENCHMARKS.md, "Reset"). A
//   token file that a rename cannot cover (a bind-mounted file) is found
//   here: the token goes to the state dir's record instead, flushed, and
//   later rotations skip the file.
//
// Blocking file I/O: the blocking pool. One rotation at a time (the
// reset's); `file_replaceable` is the daemon's memory across resets.
#pragma once

#include <string>

#include "agentd/protocol/status.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {

class TokenRotation {
 public:
  TokenRotation(std::string token_file, std::string state_dir, std::string token,
                bool& file_replaceable);
  ~TokenRotation();  // a staged temporary never committed is removed

  // An error (io_error naming the token file) leaves both places as they
  // were and no temporary behind.
  Status Stage();
  // After a successful Stage. An error leaves the token in force on disk
  // as it was, and no temporary behind.
  Status Commit();

 private:
  Status Unwritable(const Status& in_file, const Status& in_state_dir) const;
  void NoteUnreplaceable(const Status& why);

  std::string file_;
  std::string state_dir_;
  std::string token_;
  bool& file_replaceable_;
  std::string staged_path_;  // file_ or the record; empty when nothing is staged
  UniqueFd staged_;
  Status file_error_ = Status::Ok();  // why the file was not staged
};

}  // namespace agentd
