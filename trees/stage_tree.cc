#include "agentd/trees/stage_tree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "agentd/trees/dir_entries.h"
#include "agentd/trees/posix_error.h"
#include "agentd/trees/random_name.h"

namespace agentd {
namespace {

constexpr char kStagePrefix[] = ".agentd-stage-";

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) out += '/';
    out += p;
  }
  return out;
}

Status Refuse(const RelPath& member, std::string reason) {
  return Status::Error(ErrorCode::kUnsafePath,
                       "archive member \"" + member.display + "\" " + reason)
      .With("member", member.display)
      .With("reason", std::move(reason));
}

Status MemberError(int err, std::string_view what, const RelPath& member) {
  return std::move(PosixError(err, what, member.display).With("member", member.display));
}

struct timespec TimeOrOmit(const std::optional<timespec>& t) {
  return t ? *t : timespec{0, UTIME_OMIT};
}

}  // namespace

Result<StageTree> StageTree::Create(int target, const std::string& display, StageOptions opts) {
  StageTree t;
  t.display_ = display;
  t.opts_ = opts;
  t.target_.reset(::fcntl(target, F_DUPFD_CLOEXEC, 0));
  if (!t.target_) return PosixError(errno, "cannot open", display);
  for (int attempt = 0;; ++attempt) {
    t.stage_name_ = RandomName(kStagePrefix);
    t.Unjournal();
    if (opts.journal) t.journal_entry_ = opts.journal(t.target_.get(), t.stage_name_);
    if (::mkdirat(t.target_.get(), t.stage_name_.c_str(), 0700) == 0) break;
    if (errno != EEXIST || attempt == 8) {
      int err = errno;
      t.stage_name_.clear();
      return PosixError(err, "cannot create a staging directory in", display);
    }
  }
  t.stage_.reset(::openat(t.target_.get(), t.stage_name_.c_str(),
                          O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!t.stage_) return PosixError(errno, "cannot open the staging directory in", display);
  return t;
}

StageTree::~StageTree() {
  if (target_ && !stage_name_.empty()) {
    cached_fd_.reset();
    stage_.reset();
    (void)RemoveTree(target_.get(), stage_name_, display_ + "/" + stage_name_);
  }
  Unjournal();
}

void StageTree::Unjournal() {
  if (!journal_entry_.empty()) ::unlink(journal_entry_.c_str());
  journal_entry_.clear();
}

void StageTree::RecordDir(const std::vector<std::string>& parts, uint32_t mode,
                          std::optional<timespec> mtime, bool from_archive) {
  DirFixup& f = fixups_[Join(parts)];
  if (!from_archive && f.from_archive) return;  // the archive's own entry wins
  f.parts = parts;
  f.mode = mode;
  f.mtime = mtime;
  f.from_archive = from_archive;
}

Result<int> StageTree::ParentOf(const RelPath& member) {
  std::vector<std::string> parts(member.parts.begin(), member.parts.end() - 1);
  if (cache_valid_ && parts == cached_parts_) return cached_fd_.get();
  cache_valid_ = false;
  cached_fd_.reset();
  UniqueFd cur(::fcntl(stage_.get(), F_DUPFD_CLOEXEC, 0));
  if (!cur) return MemberError(errno, "cannot open the staging directory for", member);
  std::vector<std::string> walked;
  for (const std::string& comp : parts) {
    walked.push_back(comp);
    int flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    UniqueFd next(::openat(cur.get(), comp.c_str(), flags));
    if (!next && errno == ENOENT) {
      if (::mkdirat(cur.get(), comp.c_str(), 0700) != 0 && errno != EEXIST) {
        return MemberError(errno, "cannot create a directory for", member);
      }
      UniqueFd made(
          ::openat(cur.get(), comp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!made) return MemberError(errno, "cannot open a directory for", member);
      AGENTD_RETURN_IF_ERROR(ApplyOwnership(made.get(), opts_.owner, member.display));
      RecordDir(walked, 0755, std::nullopt, /*from_archive=*/false);
      next = std::move(made);
    }
    if (!next) {
      int err = errno;
      struct stat st;
      if (::fstatat(cur.get(), comp.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode)) {
          return Refuse(member, "would be written through the symlink \"" + Join(walked) + "\"");
        }
        if (!S_ISDIR(st.st_mode)) {
          return Status::Error(ErrorCode::kInvalidArchive,
                               "archive member \"" + member.display + "\" needs a directory at \"" +
                                   Join(walked) + "\" where the archive put a file")
              .With("member", member.display)
              .With("reason", "a parent of the member is not a directory");
        }
      }
      return MemberError(err, "cannot open a directory for", member);
    }
    cur = std::move(next);
  }
  cached_parts_ = std::move(parts);
  cached_fd_ = std::move(cur);
  cache_valid_ = true;
  return cached_fd_.get();
}

Status StageTree::ClearLeaf(int parent, const RelPath& member, bool keep_dir, bool* is_dir) {
  if (is_dir) *is_dir = false;
  const std::string& leaf = member.leaf();
  struct stat st;
  if (::fstatat(parent, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return MemberError(errno, "cannot inspect", member);
  }
  if (S_ISDIR(st.st_mode) && keep_dir) {
    if (is_dir) *is_dir = true;
    return Status::Ok();
  }
  // A later member replaces an earlier one of the same name, as tar does.
  if (S_ISDIR(st.st_mode)) {
    cache_valid_ = false;  // it may point below what goes away
    Result<uint64_t> removed = RemoveTree(parent, leaf, member.display);
    if (!removed.ok()) return removed.status();
  } else if (::unlinkat(parent, leaf.c_str(), 0) != 0) {
    return MemberError(errno, "cannot replace", member);
  }
  Forget(Join(member.parts));
  return Status::Ok();
}

void StageTree::Forget(const std::string& key) {
  auto below = [&](const std::string& k) {
    return k == key ||
           (k.size() > key.size() && k.compare(0, key.size(), key) == 0 && k[key.size()] == '/');
  };
  std::erase_if(fixups_, [&](const auto& kv) { return below(kv.first); });
  std::erase_if(linkable_, below);
}

Status StageTree::AddDir(const RelPath& member, uint32_t mode, std::optional<timespec> mtime) {
  Result<int> parent = ParentOf(member);
  if (!parent.ok()) return parent.status();
  bool exists = false;
  int made = ::mkdirat(*parent, member.leaf().c_str(), 0700);
  if (made != 0 && errno == EEXIST) {  // a directory stays; anything else is replaced
    AGENTD_RETURN_IF_ERROR(ClearLeaf(*parent, member, /*keep_dir=*/true, &exists));
    if (!exists) made = ::mkdirat(*parent, member.leaf().c_str(), 0700);
  }
  if (!exists) {
    if (made != 0) return MemberError(errno, "cannot create directory", member);
    if (opts_.owner.any()) {
      UniqueFd fd(::openat(*parent, member.leaf().c_str(),
                           O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!fd) return MemberError(errno, "cannot open", member);
      AGENTD_RETURN_IF_ERROR(ApplyOwnership(fd.get(), opts_.owner, member.display));
    }
  }
  RecordDir(member.parts, mode & 07777, mtime, /*from_archive=*/true);
  return Status::Ok();
}

Result<UniqueFd> StageTree::BeginFile(const RelPath& member) {
  Result<int> parent = ParentOf(member);
  if (!parent.ok()) return parent.status();
  const char* leaf = member.leaf().c_str();
  int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  UniqueFd fd(::openat(*parent, leaf, flags, 0600));
  if (!fd && errno == EEXIST) {  // a duplicate member: the later one wins
    AGENTD_RETURN_IF_ERROR(ClearLeaf(*parent, member, /*keep_dir=*/false, nullptr));
    fd.reset(::openat(*parent, leaf, flags, 0600));
  }
  if (!fd) return MemberError(errno, "cannot create", member);
  return fd;
}

Status StageTree::FinishFile(int fd, const RelPath& member, uint64_t size, uint64_t data_end,
                             uint32_t mode, std::optional<timespec> mtime) {
  // A sparse member may end in a hole: the size comes from the header.
  if (data_end != size && ::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    return MemberError(errno, "cannot size", member);
  }
  AGENTD_RETURN_IF_ERROR(ApplyOwnership(fd, opts_.owner, member.display));
  uint32_t allowed = opts_.keep_setid && ::geteuid() == 0 ? 07777 : 01777;
  if (::fchmod(fd, mode & allowed) != 0)
    return MemberError(errno, "cannot set the mode of", member);
  struct timespec times[2] = {{0, UTIME_OMIT}, TimeOrOmit(mtime)};
  if (::futimens(fd, times) != 0) return MemberError(errno, "cannot set the mtime of", member);
  linkable_.insert(Join(member.parts));
  return Status::Ok();
}

Status StageTree::AddSymlink(const RelPath& member, const std::string& target,
                             std::optional<timespec> mtime) {
  if (target.empty()) return Refuse(member, "is a symlink with an empty target");
  Result<int> parent = ParentOf(member);
  if (!parent.ok()) return parent.status();
  const char* leaf = member.leaf().c_str();
  int made = ::symlinkat(target.c_str(), *parent, leaf);
  if (made != 0 && errno == EEXIST) {  // a duplicate member: the later one wins
    AGENTD_RETURN_IF_ERROR(ClearLeaf(*parent, member, /*keep_dir=*/false, nullptr));
    made = ::symlinkat(target.c_str(), *parent, leaf);
  }
  if (made != 0) return MemberError(errno, "cannot create symlink", member);
  if (opts_.owner.any() && ::fchownat(*parent, leaf, opts_.owner.uid_or_keep(),
                                      opts_.owner.gid_or_keep(), AT_SYMLINK_NOFOLLOW) != 0) {
    return MemberError(errno, "cannot change the owner of", member);
  }
  struct timespec times[2] = {{0, UTIME_OMIT}, TimeOrOmit(mtime)};
  if (::utimensat(*parent, leaf, times, AT_SYMLINK_NOFOLLOW) != 0) {
    return MemberError(errno, "cannot set the mtime of", member);
  }
  linkable_.insert(Join(member.parts));
  return Status::Ok();
}

Status StageTree::AddHardlink(const RelPath& member, const RelPath& target) {
  std::string target_key = Join(target.parts);
  if (target.is_root() || !linkable_.count(target_key)) {
    return Refuse(member, "is a hard link to \"" + target.display +
                              "\", which is not an earlier file of this archive");
  }
  if (target_key == Join(member.parts)) return Status::Ok();  // a link to itself
  Result<int> target_parent = ParentOf(target);
  if (!target_parent.ok()) return target_parent.status();
  UniqueFd target_dir(::fcntl(*target_parent, F_DUPFD_CLOEXEC, 0));
  if (!target_dir) return MemberError(errno, "cannot open", member);
  Result<int> parent = ParentOf(member);
  if (!parent.ok()) return parent.status();
  AGENTD_RETURN_IF_ERROR(ClearLeaf(*parent, member, /*keep_dir=*/false, nullptr));
  if (::linkat(target_dir.get(), target.leaf().c_str(), *parent, member.leaf().c_str(), 0) != 0) {
    return MemberError(errno, "cannot create hard link", member);
  }
  linkable_.insert(Join(member.parts));
  return Status::Ok();
}

Status StageTree::MergeInto(int src, int dst, const std::vector<std::string>& prefix, int depth) {
  std::string display = display_ + (prefix.empty() ? "" : "/" + Join(prefix));
  if (depth > kMaxTreeDepth) {
    return Status::Error(ErrorCode::kIoError,
                         "the archive is deeper than " + std::to_string(kMaxTreeDepth) + " levels")
        .With("limit", kMaxTreeDepth);
  }
  Result<std::vector<DirEntry>> entries = ReadDirEntries(src, display);
  if (!entries.ok()) return entries.status();
  for (const DirEntry& e : *entries) {
    const char* name = e.name.c_str();
    std::string path = display + "/" + e.name;
    struct stat s, d;
    if (::fstatat(src, name, &s, AT_SYMLINK_NOFOLLOW) != 0) return PosixError(errno, "stat", path);
    if (::fstatat(dst, name, &d, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) return PosixError(errno, "cannot inspect", path);
      if (::renameat2(src, name, dst, name, RENAME_NOREPLACE) == 0) continue;
      if (errno != EEXIST) return PosixError(errno, "cannot move into place", path);
      if (::fstatat(dst, name, &d, AT_SYMLINK_NOFOLLOW) != 0)
        return PosixError(errno, "stat", path);
    }
    if (S_ISDIR(s.st_mode) && S_ISDIR(d.st_mode)) {
      std::vector<std::string> child = prefix;
      child.push_back(e.name);
      merged_existing_.insert(Join(child));
      UniqueFd from(::openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      UniqueFd to(::openat(dst, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!from || !to) return PosixError(errno, "cannot open", path);
      AGENTD_RETURN_IF_ERROR(MergeInto(from.get(), to.get(), child, depth + 1));
      continue;
    }
    // Replace what is there, never following it.
    if (S_ISDIR(d.st_mode)) {
      Result<uint64_t> removed = RemoveTree(dst, e.name, path);
      if (!removed.ok()) return removed.status();
    } else if (S_ISDIR(s.st_mode) && ::unlinkat(dst, name, 0) != 0 && errno != ENOENT) {
      return PosixError(errno, "cannot replace", path);
    }
    if (::renameat(src, name, dst, name) != 0) return PosixError(errno, "cannot move", path);
  }
  return Status::Ok();
}

Status StageTree::ApplyFixups() {
  std::vector<const DirFixup*> order;
  for (const auto& [key, f] : fixups_) {
    if (!f.from_archive && merged_existing_.count(key)) continue;  // not ours to change
    order.push_back(&f);
  }
  std::stable_sort(order.begin(), order.end(), [](const DirFixup* a, const DirFixup* b) {
    return a->parts.size() > b->parts.size();
  });
  for (const DirFixup* f : order) {
    std::string path = display_ + "/" + Join(f->parts);
    UniqueFd cur(::fcntl(target_.get(), F_DUPFD_CLOEXEC, 0));
    for (size_t i = 0; cur && i < f->parts.size(); ++i) {
      int flags =
          (i + 1 == f->parts.size() ? O_RDONLY : O_PATH) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
      cur.reset(::openat(cur.get(), f->parts[i].c_str(), flags));
    }
    if (!cur) return PosixError(errno, "cannot open", path);
    if (::fchmod(cur.get(), f->mode) != 0) return PosixError(errno, "cannot set the mode of", path);
    struct timespec times[2] = {{0, UTIME_OMIT}, TimeOrOmit(f->mtime)};
    if (f->mtime && ::futimens(cur.get(), times) != 0) {
      return PosixError(errno, "cannot set the mtime of", path);
    }
  }
  return Status::Ok();
}

Status StageTree::Commit() {
  cache_valid_ = false;
  cached_fd_.reset();
  AGENTD_RETURN_IF_ERROR(MergeInto(stage_.get(), target_.get(), {}, 0));
  stage_.reset();
  Result<uint64_t> removed = RemoveTree(target_.get(), stage_name_, display_);
  if (!removed.ok()) return removed.status();
  stage_name_.clear();
  Unjournal();
  return ApplyFixups();
}

}  // namespace agentd
