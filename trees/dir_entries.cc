#include "agentd/trees/dir_entries.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "agentd/trees/posix_error.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {
namespace {

// The kernel's record layout for getdents64 (glibc 2.36 has no wrapper).
struct LinuxDirent64 {
  ino64_t d_ino;
  off64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

constexpr size_t kDirBufferBytes = 32 * 1024;

Status TooDeep(const std::string& display) {
  return Status::Error(ErrorCode::kIoError, "directory tree under " + display + " is deeper than " +
                                                std::to_string(kMaxTreeDepth) + " levels")
      .With("path", display)
      .With("limit", kMaxTreeDepth);
}

std::string ChildDisplay(const std::string& parent, const std::string& name) {
  return parent.empty() || parent.back() == '/' ? parent + name : parent + "/" + name;
}

Status RemoveBelow(int dir_fd, const std::string& display, int depth, uint64_t* removed);

// Removes one entry of `dir_fd`; `type` may be DT_UNKNOWN.
Status RemoveEntry(int dir_fd, const std::string& name, unsigned char type,
                   const std::string& display, int depth, uint64_t* removed) {
  if (type == DT_UNKNOWN) {
    struct stat st;
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) return Status::Ok();  // gone already
      return PosixError(errno, "cannot inspect", display);
    }
    type = S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
  }
  if (type == DT_DIR) {
    if (depth >= kMaxTreeDepth) return TooDeep(display);
    UniqueFd child(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (child) {
      AGENTD_RETURN_IF_ERROR(RemoveBelow(child.get(), display, depth + 1, removed));
      child.reset();
      if (::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
        return PosixError(errno, "cannot remove", display);
      }
      ++*removed;
      return Status::Ok();
    }
    if (errno != ENOTDIR && errno != ELOOP) {
      if (errno == ENOENT) return Status::Ok();
      return PosixError(errno, "cannot open", display);
    }
    // Replaced by a non-directory since it was listed: remove that.
  }
  if (::unlinkat(dir_fd, name.c_str(), 0) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return PosixError(errno, "cannot remove", display);
  }
  ++*removed;
  return Status::Ok();
}

Status RemoveBelow(int dir_fd, const std::string& display, int depth, uint64_t* removed) {
  Result<std::vector<DirEntry>> entries = ReadDirEntries(dir_fd, display);
  if (!entries.ok()) return entries.status();
  for (const DirEntry& e : *entries) {
    AGENTD_RETURN_IF_ERROR(
        RemoveEntry(dir_fd, e.name, e.type, ChildDisplay(display, e.name), depth, removed));
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<DirEntry>> ReadDirEntries(int dir_fd, const std::string& display) {
  std::vector<DirEntry> out;
  std::vector<char> buf(kDirBufferBytes);
  if (::lseek(dir_fd, 0, SEEK_SET) < 0) return PosixError(errno, "cannot read directory", display);
  for (;;) {
    long n = ::syscall(SYS_getdents64, dir_fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return PosixError(errno, "cannot read directory", display);
    }
    if (n == 0) break;
    for (long off = 0; off < n;) {
      auto* d = reinterpret_cast<LinuxDirent64*>(buf.data() + off);
      off += d->d_reclen;
      if (std::strcmp(d->d_name, ".") == 0 || std::strcmp(d->d_name, "..") == 0) continue;
      out.push_back({d->d_name, d->d_type});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return out;
}

Result<uint64_t> RemoveTree(int parent_fd, const std::string& name, const std::string& display) {
  uint64_t removed = 0;
  Status s = RemoveEntry(parent_fd, name, DT_UNKNOWN, display, 0, &removed);
  if (!s.ok()) return s;
  return removed;
}

Result<uint64_t> RemoveTreeAtPath(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  UniqueFd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return PosixError(errno, "cannot open", parent);
  return RemoveTree(dir.get(), path.substr(slash == std::string::npos ? 0 : slash + 1), path);
}

}  // namespace agentd
