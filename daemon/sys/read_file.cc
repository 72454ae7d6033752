#include "sys/read_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "agentd/trees/posix_error.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {

Result<std::string> ReadFileToString(const std::string& path, size_t limit) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return PosixError(errno, "cannot open", path);
  std::string out;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return PosixError(errno, "cannot read", path);
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > limit) {
      return Status::Error(ErrorCode::kPayloadTooLarge,
                           path + " exceeds " + std::to_string(limit) + " bytes")
          .With("path", path)
          .With("limit", limit);
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Result<UniqueFd> ReplaceFile(const std::string& path, std::string_view data, SyncMode sync) {
  std::string tmp = path + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd) return PosixError(errno, "cannot create", tmp);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = PosixError(errno, "cannot write", tmp);
      DiscardStaged(path);
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (sync == SyncMode::kStaged) return fd;
  if (sync == SyncMode::kBeforeRename) {
    AGENTD_RETURN_IF_ERROR(FinishReplace(path, std::move(fd)));
    return UniqueFd();
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = PosixError(errno, "cannot rename over", path);
    DiscardStaged(path);
    return s;
  }
  return fd;
}

Status FinishReplace(const std::string& path, UniqueFd staged) {
  std::string tmp = path + ".tmp";
  Status s = Status::Ok();
  // A close error is a write error too: checked before the rename.
  if (::fsync(staged.get()) != 0 || ::close(staged.release()) != 0) {
    s = PosixError(errno, "cannot sync", tmp);
  } else if (::rename(tmp.c_str(), path.c_str()) != 0) {
    s = PosixError(errno, "cannot rename over", path);
  }
  if (!s.ok()) DiscardStaged(path);
  return s;
}

void DiscardStaged(const std::string& path) { ::unlink((path + ".tmp").c_str()); }

Status WriteFileAtomically(const std::string& path, std::string_view data) {
  return ReplaceFile(path, data, SyncMode::kBeforeRename).status();
}

}  // namespace agentd
