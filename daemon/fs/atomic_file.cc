#include "fs/atomic_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>

#include "agentd/trees/disk_space.h"
#include "agentd/trees/posix_error.h"
#include "agentd/trees/random_name.h"
#include "fs/file_ops.h"
#include "fs/xattr_copy.h"

namespace agentd {
namespace {

constexpr char kTempPrefix[] = ".agentd-tmp-";

bool IsNoSpace(int err) { return err == ENOSPC || err == EDQUOT; }

}  // namespace

Result<AtomicFile> AtomicFile::Create(const ConfinedRoot& root, const RelPath& rel,
                                      const WriteOptions& opts) {
  if (opts.parents && !rel.is_root()) {
    AGENTD_RETURN_IF_ERROR(MakeParents(root, rel.Parent(), opts.owner));
  }
  Result<RelPath> target = root.Canonical(rel, /*allow_missing_leaf=*/true);
  if (!target.ok()) return target.status();
  if (target->is_root()) return PosixError(EISDIR, "cannot write", rel.display);
  AtomicFile f;
  f.display_ = rel.display;
  f.leaf_ = target->leaf();
  Result<UniqueFd> dir = root.OpenAt(target->Parent(), O_PATH | O_DIRECTORY);
  if (!dir.ok()) return dir.status();
  f.dir_ = std::move(*dir);
  f.precondition_ = opts.precondition;
  f.tags_ = opts.tags;
  if (f.tags_) {
    AGENTD_RETURN_IF_ERROR(
        CheckPrecondition(f.precondition_, f.dir_.get(), f.leaf_, *f.tags_, rel.display));
  }

  uint32_t mode = opts.mode.value_or(kDefaultFileMode);
  Ownership owner = opts.owner;
  struct stat old {};
  if (::fstatat(f.dir_.get(), f.leaf_.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(old.st_mode)) return PosixError(EISDIR, "cannot write", rel.display);
    if (!S_ISREG(old.st_mode) && !S_ISLNK(old.st_mode)) {
      return Status::Error(ErrorCode::kUnsafePath, rel.display + " is not a regular file")
          .With("path", rel.display)
          .With("reason", "is a special file");
    }
    if (S_ISREG(old.st_mode)) {
      if (!opts.mode) mode = old.st_mode & 07777;
      if (::geteuid() == 0) {
        if (!owner.uid) owner.uid = old.st_uid;
        if (!owner.gid) owner.gid = old.st_gid;
      }
    }
  } else if (errno != ENOENT) {
    return PosixError(errno, "cannot inspect", rel.display);
  }

  if (opts.expected_size) {
    f.expected_ = *opts.expected_size;
    Result<uint64_t> available = AvailableBytes(f.dir_.get(), rel.display);
    if (!available.ok()) return available.status();
    if (f.expected_ > *available) return InsufficientStorage(f.expected_, *available, rel.display);
  }
  for (int attempt = 0; !f.file_; ++attempt) {
    f.temp_name_ = RandomName(kTempPrefix);
    f.journal_ = TempJournal::Record(f.dir_.get(), f.temp_name_);
    f.file_.reset(::openat(f.dir_.get(), f.temp_name_.c_str(),
                           O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!f.file_ && (errno != EEXIST || attempt == 8)) {
      int err = errno;
      f.temp_name_.clear();
      return WithSpaceNumbers(PosixError(err, "cannot create a temporary file beside", rel.display),
                              f.dir_.get(), f.expected_);
    }
  }
  AGENTD_RETURN_IF_ERROR(ApplyOwnership(f.file_.get(), owner, rel.display));
  if (::fchmod(f.file_.get(), mode) != 0) {
    return PosixError(errno, "cannot set the mode of", rel.display);
  }
  if (S_ISREG(old.st_mode) || S_ISLNK(old.st_mode)) {
    AGENTD_RETURN_IF_ERROR(f.CarryXattrs(rel.display));
  }
  if (f.expected_ > 0 &&
      ::fallocate(f.file_.get(), FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(f.expected_)) != 0 &&
      IsNoSpace(errno)) {
    return NoSpaceWhileWriting(f.dir_.get(), f.expected_, rel.display);
  }
  return f;
}

AtomicFile::~AtomicFile() { Discard(); }

void AtomicFile::Discard() {
  if (!committed_ && dir_ && !temp_name_.empty()) {
    file_.reset();
    ::unlinkat(dir_.get(), temp_name_.c_str(), 0);
    temp_name_.clear();
  }
}

Status AtomicFile::Write(std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(file_.get(), data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (IsNoSpace(errno)) {
        return NoSpaceWhileWriting(dir_.get(), std::max(expected_, written_ + data.size()),
                                   display_);
      }
      return PosixError(errno, "cannot write", display_);
    }
    written_ += static_cast<uint64_t>(n);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Result<FileStat> AtomicFile::Commit(std::optional<std::string> etag) {
  if (::fsync(file_.get()) != 0) {
    if (IsNoSpace(errno)) return NoSpaceWhileWriting(dir_.get(), written_, display_);
    return PosixError(errno, "cannot flush", display_);
  }
  {
    std::unique_lock<std::mutex> entry;
    if (tags_) {
      entry = tags_->Lock(dir_.get(), leaf_);
      Status held = CheckPrecondition(precondition_, dir_.get(), leaf_, *tags_, display_);
      if (!held.ok()) {
        // Gone before the refusal is answered, not when this object is.
        Discard();
        return held;
      }
    }
    if (::renameat(dir_.get(), temp_name_.c_str(), dir_.get(), leaf_.c_str()) != 0) {
      return PosixError(errno, "cannot replace", display_);
    }
  }
  committed_ = true;
  journal_.Forget();
  // Make the rename itself durable; a directory we may not read is skipped.
  UniqueFd dir(::openat(dir_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir) ::fsync(dir.get());
  struct stat st;
  if (::fstat(file_.get(), &st) != 0) return PosixError(errno, "cannot stat", display_);
  FileStat out = MakeFileStat(st, display_, std::nullopt);
  out.etag = std::move(etag);
  return out;
}

Status AtomicFile::CarryXattrs(const std::string& display) {
  // The file the write replaces (a final symlink was resolved: leaf_ is the
  // file itself). Gone or unreadable meanwhile: nothing to carry.
  UniqueFd old(::openat(dir_.get(), leaf_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!old) return Status::Ok();
  struct stat st;
  if (::fstat(old.get(), &st) != 0 || !S_ISREG(st.st_mode)) return Status::Ok();
  return CopyXattrs(old.get(), file_.get(), display);
}

}  // namespace agentd
