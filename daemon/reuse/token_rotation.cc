#include "reuse/token_rotation.h"

#include "auth/rotated_token.h"
#include "log/log.h"
#include "sys/read_file.h"

namespace agentd {

TokenRotation::TokenRotation(std::string token_file, std::string state_dir, std::string token,
                             bool& file_replaceable)
    : file_(std::move(token_file)),
      state_dir_(std::move(state_dir)),
      token_(std::move(token)),
      file_replaceable_(file_replaceable) {}

TokenRotation::~TokenRotation() {
  if (!staged_path_.empty()) DiscardStaged(staged_path_);
}

Status TokenRotation::Stage() {
  if (file_replaceable_) {
    Result<UniqueFd> fd = ReplaceFile(file_, token_ + "\n", SyncMode::kStaged);
    if (fd.ok()) {
      staged_path_ = file_;
      staged_ = std::move(*fd);
      return Status::Ok();
    }
    file_error_ = fd.status();
  }
  std::string record_path = RotatedTokenPath(state_dir_);
  Result<std::string> record = RotatedTokenRecord(file_, token_);
  Result<UniqueFd> fd = record.ok() ? ReplaceFile(record_path, *record, SyncMode::kStaged)
                                    : Result<UniqueFd>(record.status());
  if (!fd.ok()) return Unwritable(file_error_, fd.status());
  staged_path_ = std::move(record_path);
  staged_ = std::move(*fd);
  return Status::Ok();
}

Status TokenRotation::Commit() {
  std::string path = std::move(staged_path_);
  staged_path_.clear();
  Status done = FinishReplace(path, std::move(staged_));
  bool in_file = path == file_;
  if (done.ok()) {
    if (in_file) {
      ForgetRotatedToken(state_dir_);
    } else if (!file_error_.ok()) {
      NoteUnreplaceable(file_error_);
    }
    return done;
  }
  if (!in_file) return Unwritable(file_error_, done);
  // The file's directory took the temporary but the rename cannot cover
  // the file (EBUSY: a bind mount), or the flush failed.
  Status kept = KeepRotatedToken(state_dir_, file_, token_);
  if (!kept.ok()) return Unwritable(done, kept);
  NoteUnreplaceable(done);
  return kept;
}

Status TokenRotation::Unwritable(const Status& in_file, const Status& in_state_dir) const {
  std::string why =
      in_file.ok() ? in_state_dir.message() : in_file.message() + "; " + in_state_dir.message();
  return Status::Error(ErrorCode::kIoError, "cannot write the next token to --token-file " + file_ +
                                                " or the state dir (" + why + ")")
      .With("path", file_);
}

void TokenRotation::NoteUnreplaceable(const Status& why) {
  if (!file_replaceable_) return;
  Log(LogLevel::kWarn,
      "the token file cannot be replaced; the next tokens are kept in the state dir",
      json::Object().Set("path", file_).Set("error", why.message()));
  file_replaceable_ = false;
}

}  // namespace agentd
