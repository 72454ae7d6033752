#include "fs/tar_create.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "fs/dir_entries.h"
#include "fs/file_read.h"
#include "sys/posix_error.h"
#include "sys/unique_fd.h"

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
      AGENTD_RETURN_IF_ERROR(
          Add(dir, e.name, prefix.empty() ? e.name : prefix + "/" + e.name, depth));
    }
    return Status::Ok();
  }

 private:
  Status Add(int dir, const std::string& name, const std::string& rel, int depth) {
    std::string path = display_ + "/" + rel;
    struct stat st;
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) return Status::Ok();  // removed while walking
      return PosixError(errno, "cannot stat", path);
    }
    if (S_ISLNK(st.st_mode)) {
      char buf[4096];
      ssize_t n = ::readlinkat(dir, name.c_str(), buf, sizeof(buf));
      if (n < 0) return PosixError(errno, "cannot read symlink", path);
      return w_.AddSymlink(rel, st, std::string(buf, static_cast<size_t>(n)));
    }
    if (S_ISREG(st.st_mode)) {
      UniqueFd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
      if (!fd) return PosixError(errno, "cannot open", path);
      if (::fstat(fd.get(), &st) != 0) return PosixError(errno, "cannot stat", path);
      if (!S_ISREG(st.st_mode)) return Status::Ok();  // swapped meanwhile
      return w_.AddFile(rel, st, fd.get());
    }
    if (!S_ISDIR(st.st_mode)) return Status::Ok();  // devices, FIFOs, sockets
    UniqueFd sub(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub) return PosixError(errno, "cannot open", path);
    if (::fstat(sub.get(), &st) != 0) return PosixError(errno, "cannot stat", path);
    AGENTD_RETURN_IF_ERROR(w_.AddDir(rel, st));
    if (IsPseudoFileSystem(sub.get())) return Status::Ok();  // a /proc mount: not content
    return Walk(sub.get(), rel, depth + 1);
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
