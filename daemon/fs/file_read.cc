#include "fs/file_read.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "agentd/trees/posix_error.h"
#include "fs/line_scanner.h"

namespace agentd {
bool IsPseudoFileSystem(int fd) {
  struct statfs fs;
  if (::fstatfs(fd, &fs) != 0) return false;
  switch (fs.f_type) {
    case PROC_SUPER_MAGIC:
    case SYSFS_MAGIC:
    case DEBUGFS_MAGIC:
    case TRACEFS_MAGIC:
    case CGROUP_SUPER_MAGIC:
    case CGROUP2_SUPER_MAGIC:
    case SECURITYFS_MAGIC:
      return true;
    default:
      return false;
  }
}

Result<ReadableFile> OpenForRead(const ConfinedRoot& root, const RelPath& rel) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  Result<UniqueFd> fd = root.OpenAt(rel, O_RDONLY | O_NONBLOCK);
  if (!fd.ok()) return fd.status();
  ReadableFile f;
  f.fd = std::move(*fd);
  if (::fstat(f.fd.get(), &f.st) != 0) return PosixError(errno, "cannot stat", rel.display);
  if (S_ISDIR(f.st.st_mode)) return PosixError(EISDIR, "cannot read", rel.display);
  if (!S_ISREG(f.st.st_mode)) {
    return Status::Error(ErrorCode::kUnsafePath, rel.display + " is not a regular file")
        .With("path", rel.display)
        .With("reason", "is a special file");
  }
  int flags = ::fcntl(f.fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(f.fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  f.pseudo = IsPseudoFileSystem(f.fd.get());
  f.size_unknown = f.st.st_size == 0 || f.pseudo;
  return f;
}

Result<std::pair<uint64_t, uint64_t>> LocateLines(int fd, uint64_t size, const LineRange& range,
                                                  const std::string& display) {
  LineRangeScanner scanner(range);
  std::unique_ptr<char[]> buf(new char[kReadBlockBytes]);
  ::posix_fadvise(fd, 0, static_cast<off_t>(size), POSIX_FADV_SEQUENTIAL);
  uint64_t off = 0;
  while (off < size && !scanner.done() && !scanner.open_ended()) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(kReadBlockBytes, size - off));
    ssize_t n = ::pread(fd, buf.get(), want, static_cast<off_t>(off));
    if (n < 0) {
      if (errno == EINTR) continue;
      return PosixError(errno, "cannot read", display);
    }
    if (n == 0) break;  // the file shrank
    scanner.Feed(std::string_view(buf.get(), static_cast<size_t>(n)));
    off += static_cast<uint64_t>(n);
  }
  if (scanner.open_ended()) return std::make_pair(scanner.begin(), size);
  scanner.Finish();
  return std::make_pair(scanner.begin(), scanner.end());
}

}  // namespace agentd
