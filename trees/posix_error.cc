#include "agentd/trees/posix_error.h"

#include <cerrno>
#include <cstring>

namespace agentd {

ErrorCode ErrorCodeForErrno(int err) {
  switch (err) {
    case ENOENT:
      return ErrorCode::kNotFound;
    case EACCES:
    case EPERM:
    case EROFS:
      return ErrorCode::kPermissionDenied;
    case EEXIST:
      return ErrorCode::kAlreadyExists;
    case ENOTDIR:
      return ErrorCode::kNotADirectory;
    case EISDIR:
      return ErrorCode::kIsDirectory;
    case ENOTEMPTY:
      return ErrorCode::kDirectoryNotEmpty;
    case ENOSPC:
    case EDQUOT:
      return ErrorCode::kInsufficientStorage;
    case EXDEV:  // openat2 RESOLVE_BENEATH: the path left the root
    case ELOOP:  // a symlink where none may be followed
      return ErrorCode::kUnsafePath;
    case ENAMETOOLONG:
    case EINVAL:
      return ErrorCode::kInvalidRequest;
    default:
      return ErrorCode::kIoError;
  }
}

Status PosixError(int err, std::string_view operation, std::string_view path) {
  std::string message(operation);
  if (!path.empty()) {
    message += " ";
    message += path;
  }
  message += ": ";
  message += std::strerror(err);
  Status s = Status::Error(ErrorCodeForErrno(err), std::move(message));
  s.With("errno", std::string(strerrorname_np(err) ? strerrorname_np(err) : "unknown"));
  if (!path.empty()) s.With("path", std::string(path));
  return s;
}

}  // namespace agentd
