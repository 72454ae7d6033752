#include "search/tree_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "agentd/trees/dir_entries.h"
#include "fs/file_read.h"
#include "search/wildmatch.h"

namespace agentd {
namespace {

// An ignore file larger than this is not read (git has no limit; a
// multi-megabyte ignore file is not one a person wrote).
constexpr size_t kMaxIgnoreFileBytes = 1 << 20;

// The content of `name` in `dir_fd` when it is a regular file (never
// following a symlink), else "".
std::string ReadSmallFile(int dir_fd, const char* name) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return {};
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  std::string out;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxIgnoreFileBytes) return {};
  }
  return out;
}

bool HasGitDir(int dir_fd) {
  struct stat st;
  return ::fstatat(dir_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0;
}

std::string JoinWalk(const std::string& parent, const std::string& name) {
  return parent.empty() ? name : parent + "/" + name;
}

}  // namespace

bool PathFilterMatches(const std::string& pattern, const std::string& walk_path) {
  if (pattern.find('/') != std::string::npos) return WildMatch(pattern, walk_path);
  size_t slash = walk_path.rfind('/');
  return WildMatch(pattern, slash == std::string::npos ? walk_path : walk_path.substr(slash + 1));
}

size_t TreeWalk::PushIgnoreFiles(int fd, const std::string& walk_path, bool repo_top,
                                 const std::vector<DirEntry>& listed) {
  size_t pushed = 0;
  if (repo_top) {
    // .git/info/exclude ranks below the top directory's own .gitignore.
    UniqueFd git(::openat(fd, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    UniqueFd info(git ? ::openat(git.get(), "info", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                      : -1);
    if (info) {
      auto rules = std::make_shared<IgnoreRules>();
      rules->Add(ReadSmallFile(info.get(), "exclude"));
      if (!rules->empty()) {
        ignores_.Push({rules, walk_path, ""});
        ++pushed;
      }
    }
  }
  // Only names the listing holds are opened (most directories have
  // neither: two failed opens each, saved).
  auto listed_has = [&](const char* name) {
    return std::any_of(listed.begin(), listed.end(),
                       [&](const DirEntry& e) { return e.name == name; });
  };
  auto rules = std::make_shared<IgnoreRules>();
  // .ignore after .gitignore: its rules win (as in ripgrep).
  if (listed_has(".gitignore")) rules->Add(ReadSmallFile(fd, ".gitignore"));
  if (listed_has(".ignore")) rules->Add(ReadSmallFile(fd, ".ignore"));
  if (!rules->empty()) {
    ignores_.Push({rules, walk_path, ""});
    ++pushed;
  }
  return pushed;
}

// The ignore files of the directories above the start, up to the top of
// the repository holding it (the nearest directory with a ".git"); none
// when the start is in no repository.
void TreeWalk::PushAncestorIgnores() {
  Result<RelPath> real = root_.Canonical(start_, /*allow_missing_leaf=*/false);
  if (!real.ok()) return;
  std::vector<UniqueFd> dirs;  // dirs[k]: the first k components
  for (size_t k = 0; k <= real->parts.size(); ++k) {
    RelPath prefix;
    prefix.parts.assign(real->parts.begin(), real->parts.begin() + static_cast<long>(k));
    prefix.display = start_.display;
    Result<UniqueFd> fd = root_.OpenAt(prefix, O_RDONLY | O_DIRECTORY);
    if (!fd.ok()) return;
    dirs.push_back(std::move(*fd));
  }
  size_t top = dirs.size();
  for (size_t k = dirs.size(); k-- > 0;) {
    if (HasGitDir(dirs[k].get())) {
      top = k;
      break;
    }
  }
  if (top == dirs.size() || top == real->parts.size()) return;  // none, or the start itself
  for (size_t k = top; k < real->parts.size(); ++k) {
    std::string lead;
    for (size_t j = k; j < real->parts.size(); ++j) lead = JoinWalk(lead, real->parts[j]);
    if (k == top) {
      UniqueFd git(
          ::openat(dirs[k].get(), ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      UniqueFd info(
          git ? ::openat(git.get(), "info", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1);
      if (info) {
        auto rules = std::make_shared<IgnoreRules>();
        rules->Add(ReadSmallFile(info.get(), "exclude"));
        if (!rules->empty()) ignores_.Push({rules, "", lead});
      }
    }
    auto rules = std::make_shared<IgnoreRules>();
    rules->Add(ReadSmallFile(dirs[k].get(), ".gitignore"));
    rules->Add(ReadSmallFile(dirs[k].get(), ".ignore"));
    if (!rules->empty()) ignores_.Push({rules, "", lead});
  }
}

UniqueFd TreeWalk::OpenFollowed(std::string_view walk_path, int flags) const {
  RelPath rel = start_;
  size_t pos = 0;
  while (pos <= walk_path.size()) {
    size_t slash = walk_path.find('/', pos);
    if (slash == std::string_view::npos) slash = walk_path.size();
    rel.parts.emplace_back(walk_path.substr(pos, slash - pos));
    pos = slash + 1;
  }
  Result<UniqueFd> fd = root_.OpenAt(rel, flags);
  return fd.ok() ? std::move(*fd) : UniqueFd();
}

Status TreeWalk::Run(int start_fd, const std::function<WalkStep(const WalkEntry&)>& visit) {
  if (opts_.gitignore) PushAncestorIgnores();
  struct stat st;
  if (::fstat(start_fd, &st) != 0) return Status::Error(ErrorCode::kIoError, "cannot stat start");
  on_path_.emplace_back(st.st_dev, st.st_ino);
  // Reading the start directory is checked here so its failure is the
  // route's error, not a silent empty answer.
  Result<std::vector<DirEntry>> entries = ReadDirEntries(start_fd, start_.display);
  if (!entries.ok()) return entries.status();
  Dir(start_fd, "", 0, std::move(*entries), visit);
  return Status::Ok();
}

UniqueFd TreeWalk::Open(const WalkEntry& e, int flags) const {
  return OpenListed(e.dir_fd, e.name.c_str(), e.walk_path, e.followed_link, flags);
}

UniqueFd TreeWalk::OpenListed(int dir_fd, const char* name, std::string_view walk_path,
                              bool followed, int flags) const {
  if (followed) return OpenFollowed(walk_path, flags);
  return UniqueFd(::openat(dir_fd, name, flags | O_NOFOLLOW | O_CLOEXEC));
}

WalkStep TreeWalk::Dir(int fd, const std::string& walk_path, int depth,
                       std::vector<DirEntry> entries,
                       const std::function<WalkStep(const WalkEntry&)>& visit) {
  size_t pushed = 0;
  if (opts_.gitignore) {
    bool top = std::any_of(entries.begin(), entries.end(),
                           [](const DirEntry& e) { return e.name == ".git"; });
    pushed = PushIgnoreFiles(fd, walk_path, top, entries);
  }
  WalkStep result = WalkStep::kContinue;
  for (const DirEntry& e : entries) {
    if (e.name == ".git") continue;
    if (!opts_.hidden && e.name[0] == '.') continue;
    std::string path = JoinWalk(walk_path, e.name);
    struct stat st;
    const struct stat* known = nullptr;
    mode_t type = e.type == DT_REG ? S_IFREG : e.type == DT_DIR ? S_IFDIR : 0;
    bool followed = false;
    if (type == 0) {  // DT_UNKNOWN, symlinks and the rare kinds: ask
      if (::fstatat(fd, e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone
      if (S_ISLNK(st.st_mode) && opts_.follow) {
        // Through the root, so a link out of it fails (unsafe: not entered).
        UniqueFd target = OpenFollowed(path, O_PATH);
        if (!target || ::fstat(target.get(), &st) != 0) {
          ++counts_.unreadable;
          continue;
        }
        followed = true;
      }
      known = &st;
      type = st.st_mode & S_IFMT;
    }
    bool is_dir = type == S_IFDIR;
    if (opts_.gitignore && ignores_.Ignored(path, is_dir)) continue;
    if (std::any_of(opts_.exclude.begin(), opts_.exclude.end(),
                    [&](const std::string& p) { return PathFilterMatches(p, path); })) {
      continue;
    }
    WalkEntry entry{fd, e.name, path, type, known, followed};
    WalkStep step = visit(entry);
    if (step == WalkStep::kStop) {
      result = WalkStep::kStop;
      break;
    }
    if (step == WalkStep::kSkip || !is_dir || depth + 1 > kMaxTreeDepth) continue;
    UniqueFd sub = Open(entry, O_RDONLY | O_DIRECTORY);
    struct stat dst;
    if (!sub || ::fstat(sub.get(), &dst) != 0) {
      ++counts_.unreadable;
      continue;
    }
    std::pair<dev_t, ino_t> id(dst.st_dev, dst.st_ino);
    if (std::find(on_path_.begin(), on_path_.end(), id) != on_path_.end()) continue;  // a loop
    if (IsPseudoFileSystem(sub.get())) continue;  // /proc and the like: not content
    Result<std::vector<DirEntry>> children = ReadDirEntries(sub.get(), path);
    if (!children.ok()) {
      ++counts_.unreadable;
      continue;
    }
    on_path_.push_back(id);
    WalkStep inner = Dir(sub.get(), path, depth + 1, std::move(*children), visit);
    on_path_.pop_back();
    if (inner == WalkStep::kStop) {
      result = WalkStep::kStop;
      break;
    }
  }
  for (size_t k = 0; k < pushed; ++k) ignores_.Pop();
  return result;
}

}  // namespace agentd
