#include "fs/file_ops.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <utility>

#include "agentd/trees/dir_entries.h"
#include "agentd/trees/posix_error.h"

namespace agentd {
namespace {

std::optional<std::string> ReadLinkAt(int dir_fd, const std::string& name) {
  char buf[4096];
  ssize_t n = ::readlinkat(dir_fd, name.c_str(), buf, sizeof(buf));
  if (n < 0) return std::nullopt;
  return std::string(buf, static_cast<size_t>(n));
}

std::string JoinDisplay(const std::string& dir, const std::string& name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

// Sets the final mode and owner of a directory this call just created
// (open, then fchown before fchmod: chown clears setgid).
Status FinishDir(int parent_fd, const std::string& name, uint32_t mode, const Ownership& owner,
                 const std::string& display, struct stat* st) {
  UniqueFd fd(::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return PosixError(errno, "cannot open", display);
  AGENTD_RETURN_IF_ERROR(ApplyOwnership(fd.get(), owner, display));
  if (::fchmod(fd.get(), mode) != 0) return PosixError(errno, "cannot set the mode of", display);
  if (st && ::fstat(fd.get(), st) != 0) return PosixError(errno, "cannot stat", display);
  return Status::Ok();
}

}  // namespace

FileStat MakeFileStat(const struct stat& st, std::string path, std::optional<std::string> target) {
  FileStat out;
  out.path = std::move(path);
  if (S_ISREG(st.st_mode)) {
    out.type = FileStat::Type::kFile;
  } else if (S_ISDIR(st.st_mode)) {
    out.type = FileStat::Type::kDir;
  } else if (S_ISLNK(st.st_mode)) {
    out.type = FileStat::Type::kSymlink;
    out.target = std::move(target);
  }
  out.size = static_cast<uint64_t>(st.st_size);
  out.mode = st.st_mode & 07777;
  out.uid = st.st_uid;
  out.gid = st.st_gid;
  out.mtime = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
  return out;
}

Result<FileStat> StatWithTag(const ConfinedRoot& root, const RelPath& rel, bool follow,
                             FileTags& tags) {
  Result<FileStat> st = StatPath(root, rel, follow);
  if (!st.ok() || st->type != FileStat::Type::kFile) return st;
  // The tag and the numbers answered come from one open descriptor, so
  // they describe the same file even if the path is replaced meanwhile.
  int flags = O_RDONLY | O_NONBLOCK | (follow ? 0 : O_NOFOLLOW);
  Result<UniqueFd> fd = root.OpenAt(rel, flags);
  if (!fd.ok()) return st;  // stat-able but not readable: no tag
  struct stat now;
  if (::fstat(fd->get(), &now) != 0 || !S_ISREG(now.st_mode)) return st;
  Result<std::string> tag = tags.Of(fd->get(), rel.display);
  if (!tag.ok()) return st;  // still being written: no tag this time
  FileStat out = MakeFileStat(now, rel.display, std::nullopt);
  out.etag = std::move(*tag);
  return out;
}

Result<FileStat> StatPath(const ConfinedRoot& root, const RelPath& rel, bool follow) {
  struct stat st;
  if (follow || rel.is_root() || rel.leaf() == "..") {
    Result<UniqueFd> fd = root.OpenAt(rel, O_PATH);
    if (!fd.ok()) return fd.status();
    if (::fstat(fd->get(), &st) != 0) return PosixError(errno, "cannot stat", rel.display);
    return MakeFileStat(st, rel.display, std::nullopt);
  }
  Result<UniqueFd> parent = root.OpenParent(rel);
  if (!parent.ok()) return parent.status();
  if (::fstatat(parent->get(), rel.leaf().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return PosixError(errno, "cannot stat", rel.display);
  }
  std::optional<std::string> target;
  if (S_ISLNK(st.st_mode)) target = ReadLinkAt(parent->get(), rel.leaf());
  return MakeFileStat(st, rel.display, std::move(target));
}

Result<std::vector<FileStat>> ListDir(const ConfinedRoot& root, const RelPath& rel) {
  Result<UniqueFd> dir = root.OpenAt(rel, O_RDONLY | O_DIRECTORY);
  if (!dir.ok()) return dir.status();
  Result<std::vector<DirEntry>> entries = ReadDirEntries(dir->get(), rel.display);
  if (!entries.ok()) return entries.status();
  std::vector<FileStat> out;
  out.reserve(entries->size());
  for (const DirEntry& e : *entries) {
    struct stat st;
    if (::fstatat(dir->get(), e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // removed while listing
      return PosixError(errno, "cannot stat", JoinDisplay(rel.display, e.name));
    }
    std::optional<std::string> target;
    if (S_ISLNK(st.st_mode)) target = ReadLinkAt(dir->get(), e.name);
    out.push_back(MakeFileStat(st, JoinDisplay(rel.display, e.name), std::move(target)));
  }
  return out;
}

Status MakeParents(const ConfinedRoot& root, const RelPath& rel, const Ownership& owner,
                   std::vector<RelPath>* created) {
  if (root.OpenAt(rel, O_PATH | O_DIRECTORY).ok()) return Status::Ok();
  RelPath prefix;
  prefix.display = rel.display;
  for (const std::string& part : rel.parts) {
    RelPath next = prefix;
    next.parts.push_back(part);
    Result<UniqueFd> fd = root.OpenAt(next, O_PATH | O_DIRECTORY);
    if (!fd.ok() && fd.status().code() == ErrorCode::kNotFound && part != "..") {
      Result<UniqueFd> parent = root.OpenAt(prefix, O_PATH | O_DIRECTORY);
      if (!parent.ok()) return parent.status();
      if (::mkdirat(parent->get(), part.c_str(), 0700) == 0) {
        AGENTD_RETURN_IF_ERROR(
            FinishDir(parent->get(), part, kDefaultDirMode, owner, rel.display, nullptr));
        if (created) created->push_back(next);
      } else if (errno != EEXIST) {
        return PosixError(errno, "cannot create directory", rel.display);
      }
    } else if (!fd.ok()) {
      return fd.status();
    }
    prefix = std::move(next);
  }
  return Status::Ok();
}

Result<FileStat> MakeDir(const ConfinedRoot& root, const RelPath& rel, uint32_t mode, bool parents,
                         const Ownership& owner) {
  auto existing = [&]() -> Result<FileStat> {
    Result<UniqueFd> fd = root.OpenAt(rel, O_PATH | O_DIRECTORY);
    if (!fd.ok()) {
      if (fd.status().code() != ErrorCode::kNotADirectory) return fd.status();
      return PosixError(EEXIST, "cannot create directory", rel.display);
    }
    struct stat st;
    if (::fstat(fd->get(), &st) != 0) return PosixError(errno, "cannot stat", rel.display);
    return MakeFileStat(st, rel.display, std::nullopt);
  };
  if (rel.is_root() || rel.leaf() == "..") {
    if (parents) return existing();
    return PosixError(EEXIST, "cannot create directory", rel.display);
  }
  if (parents) AGENTD_RETURN_IF_ERROR(MakeParents(root, rel.Parent(), owner));
  Result<UniqueFd> parent = root.OpenParent(rel);
  if (!parent.ok()) return parent.status();
  if (::mkdirat(parent->get(), rel.leaf().c_str(), 0700) != 0) {
    if (errno == EEXIST && parents) return existing();
    return PosixError(errno, "cannot create directory", rel.display);
  }
  struct stat st;
  AGENTD_RETURN_IF_ERROR(FinishDir(parent->get(), rel.leaf(), mode, owner, rel.display, &st));
  return MakeFileStat(st, rel.display, std::nullopt);
}

Status RenamePath(const ConfinedRoot& root, const RelPath& from, const RelPath& to, bool overwrite,
                  const Guard* guard) {
  for (const RelPath* p : {&from, &to}) {
    if (p->is_root()) {
      return Status::Error(ErrorCode::kUnsafePath, "the root " + p->display + " cannot be renamed")
          .With("path", p->display)
          .With("reason", "is the root");
    }
  }
  auto both = [&](Status s) {
    return std::move(s.With("from", from.display).With("to", to.display));
  };
  Result<UniqueFd> from_dir = root.OpenParent(from);
  if (!from_dir.ok()) return both(from_dir.status());
  Result<UniqueFd> to_dir = root.OpenParent(to);
  if (!to_dir.ok()) return both(to_dir.status());
  std::pair<std::unique_lock<std::mutex>, std::unique_lock<std::mutex>> entries;
  if (guard) {
    entries = guard->tags.LockPair(from_dir->get(), from.leaf(), to_dir->get(), to.leaf());
    Precondition source{guard->pre.if_match, false};
    Precondition dest{{}, guard->pre.if_none_match};
    AGENTD_RETURN_IF_ERROR(
        CheckPrecondition(source, from_dir->get(), from.leaf(), guard->tags, from.display));
    AGENTD_RETURN_IF_ERROR(
        CheckPrecondition(dest, to_dir->get(), to.leaf(), guard->tags, to.display));
  }
  unsigned flags = overwrite ? 0 : RENAME_NOREPLACE;
  if (::renameat2(from_dir->get(), from.leaf().c_str(), to_dir->get(), to.leaf().c_str(), flags) ==
      0) {
    return Status::Ok();
  }
  int err = errno;
  const std::string* blame = &to.display;
  if (err == ENOENT) blame = &from.display;
  if (err == EXDEV) {
    return Status::Error(ErrorCode::kCrossDevice,
                         from.display + " and " + to.display + " are on different file systems")
        .With("path", from.display)
        .With("from", from.display)
        .With("to", to.display);
  }
  return std::move(PosixError(err, "cannot rename " + from.display + " to", to.display)
                       .With("path", *blame)
                       .With("from", from.display)
                       .With("to", to.display));
}

Result<uint64_t> RemovePath(const ConfinedRoot& root, const RelPath& rel, bool recursive,
                            const Guard* guard) {
  if (rel.is_root()) {
    return Status::Error(ErrorCode::kUnsafePath, "refusing to remove the root " + rel.display)
        .With("path", rel.display)
        .With("reason", "is the root");
  }
  Result<UniqueFd> parent = root.OpenParent(rel);
  if (!parent.ok()) return parent.status();
  std::unique_lock<std::mutex> entry;
  if (guard) {
    entry = guard->tags.Lock(parent->get(), rel.leaf());
    AGENTD_RETURN_IF_ERROR(
        CheckPrecondition(guard->pre, parent->get(), rel.leaf(), guard->tags, rel.display));
  }
  struct stat st;
  if (::fstatat(parent->get(), rel.leaf().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return PosixError(errno, "cannot remove", rel.display);
  }
  if (S_ISDIR(st.st_mode) && recursive) return RemoveTree(parent->get(), rel.leaf(), rel.display);
  int flags = S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0;
  if (::unlinkat(parent->get(), rel.leaf().c_str(), flags) != 0) {
    int err = errno == EEXIST ? ENOTEMPTY : errno;
    return PosixError(err, "cannot remove", rel.display);
  }
  return uint64_t{1};
}

Result<RelPath> RealPath(const ConfinedRoot& root, const RelPath& rel) {
  return root.Canonical(rel, /*allow_missing_leaf=*/false);
}

}  // namespace agentd
