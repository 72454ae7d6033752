#include "fs/xattr_copy.h"

#include <sys/xattr.h>

#include <cerrno>
#include <string_view>
#include <vector>

#include "agentd/trees/posix_error.h"

namespace agentd {
namespace {

// Errors that mean "this attribute (or any) cannot be carried here".
bool Skippable(int err) {
  return err == ENOTSUP || err == EPERM || err == EACCES || err == ENODATA || err == ERANGE;
}

// The value of `name`, sized by a first call (retried if it grew between).
Result<std::vector<char>> ValueOf(int fd, const char* name, const std::string& display) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    ssize_t size = ::fgetxattr(fd, name, nullptr, 0);
    if (size < 0) return PosixError(errno, "cannot read an attribute of", display);
    std::vector<char> value(static_cast<size_t>(size));
    ssize_t got = ::fgetxattr(fd, name, value.data(), value.size());
    if (got >= 0) {
      value.resize(static_cast<size_t>(got));
      return value;
    }
    if (errno != ERANGE) return PosixError(errno, "cannot read an attribute of", display);
  }
  return PosixError(ERANGE, "cannot read an attribute of", display);
}

}  // namespace

Status CopyXattrs(int from_fd, int to_fd, const std::string& display) {
  ssize_t size = ::flistxattr(from_fd, nullptr, 0);
  if (size < 0) {
    return Skippable(errno) ? Status::Ok()
                            : PosixError(errno, "cannot list the attributes of", display);
  }
  std::vector<char> names(static_cast<size_t>(size));
  size = ::flistxattr(from_fd, names.data(), names.size());
  if (size < 0) {
    return Skippable(errno) ? Status::Ok()
                            : PosixError(errno, "cannot list the attributes of", display);
  }
  for (size_t at = 0; at < static_cast<size_t>(size);) {
    const char* name = names.data() + at;
    at += std::string_view(name).size() + 1;
    Result<std::vector<char>> value = ValueOf(from_fd, name, display);
    if (!value.ok()) continue;  // an attribute we may not read is not ours to carry
    if (::fsetxattr(to_fd, name, value->data(), value->size(), 0) != 0 && !Skippable(errno)) {
      return PosixError(errno, "cannot set an attribute of", display);
    }
  }
  return Status::Ok();
}

}  // namespace agentd
