#include "fs/tar_create.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "agentd/trees/dir_entries.h"
#include "agentd/trees/posix_error.h"
#include "agentd/trees/unique_fd.h"
#include "fs/file_read.h"

namespace agentd {
namespace {

bool IsDaemonTemporary(const std::string& name) {
  return name.starts_with(".agentd-tmp-") || name.starts_with(".agentd-stage-");
}

class TreeArchiver {
 public:
  TreeArchiver(TarWriter& writer, const std::string& display) : w_(writer), display_(display) {}

  Status Walk(int dir, const std::string& prefix, int depth) {
    std::string where = prefix.empty() ? display_ : display_ + "/" + prefix;
    if (depth > kMaxTreeDepth) {
      return Status::Error(ErrorCode::kIoError, "the tree under " + display_ + " is deeper than " +
                                                    std::to_string(kMaxTreeDepth) + " levels")
          .With("path", where)
          .With("limit", kMaxTreeDepth);
    }
    Result<std::vector<DirEntry>> entries = ReadDirEntries(dir, where);
    if (!entries.ok()) return entries.status();
    for (const DirEntry& e : *entries) {
      if (depth == 0 && IsDaemonTemporary(e.name)) continue;
      AGENTD_RETURN_IF_ERROR(Add(dir, e, prefix.empty() ? e.name : prefix + "/" + e.name, depth));
    }
    return Status::Ok();
  }

 private:
  // `e.type` (from getdents) saves the lstat for the common kinds; what is
  // opened is always checked again with fstat, so a race can only make an
  // entry be skipped or described as it is now.
  Status Add(int dir, const DirEntry& e, const std::string& rel, int depth) {
    const char* name = e.name.c_str();
    std::string path = display_ + "/" + rel;
    struct stat st;
    if (e.type == DT_REG || e.type == DT_DIR) {
      int flags =
          O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (e.type == DT_DIR ? O_DIRECTORY : 0);
      UniqueFd fd(::openat(dir, name, flags));
      if (fd) {
        if (::fstat(fd.get(), &st) != 0) return PosixError(errno, "cannot stat", path);
        if (S_ISREG(st.st_mode)) return w_.AddFile(rel, st, fd.get());
        if (S_ISDIR(st.st_mode)) return AddDir(fd.get(), rel, st, depth);
        return Status::Ok();  // swapped for something we do not archive
      }
      if (errno == ENOENT) return Status::Ok();  // removed while walking
      if (errno != ELOOP && errno != ENOTDIR) return PosixError(errno, "cannot open", path);
      // Replaced by a symlink (or a non-directory) since it was listed.
    }
    if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) return Status::Ok();
      return PosixError(errno, "cannot stat", path);
    }
    if (S_ISLNK(st.st_mode)) {
      char buf[4096];
      ssize_t n = ::readlinkat(dir, name, buf, sizeof(buf));
      if (n < 0) return PosixError(errno, "cannot read symlink", path);
      return w_.AddSymlink(rel, st, std::string(buf, static_cast<size_t>(n)));
    }
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) return Status::Ok();  // devices, FIFOs
    int flags =
        O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0);
    UniqueFd fd(::openat(dir, name, flags));
    if (!fd) return PosixError(errno, "cannot open", path);
    if (::fstat(fd.get(), &st) != 0) return PosixError(errno, "cannot stat", path);
    if (S_ISREG(st.st_mode)) return w_.AddFile(rel, st, fd.get());
    if (S_ISDIR(st.st_mode)) return AddDir(fd.get(), rel, st, depth);
    return Status::Ok();
  }

  Status AddDir(int fd, const std::string& rel, const struct stat& st, int depth) {
    AGENTD_RETURN_IF_ERROR(w_.AddDir(rel, st));
    if (IsPseudoFileSystem(fd)) return Status::Ok();  // a /proc mount: not content
    return Walk(fd, rel, depth + 1);
  }

  TarWriter& w_;
  const std::string& display_;
};

}  // namespace

Status CreateTar(int dir, const std::string& display, TarCompression compression, ByteSink& sink) {
  TarWriter writer(sink, compression);
  AGENTD_RETURN_IF_ERROR(writer.Open());
  TreeArchiver archiver(writer, display);
  AGENTD_RETURN_IF_ERROR(archiver.Walk(dir, "", 0));
  return writer.Close();
}

}  // namespace agentd
