#include "run/tree_scan.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <memory>

#include "agentd/protocol/sha256.h"
#include "agentd/trees/posix_error.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {
namespace {

using Clock = std::chrono::steady_clock;

int64_t Ns(const struct timespec& t) { return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; }

char TypeOf(mode_t m) {
  if (S_ISREG(m)) return 'f';
  if (S_ISDIR(m)) return 'd';
  if (S_ISLNK(m)) return 'l';
  return 'o';
}

std::string TypeName(char t) {
  switch (t) {
    case 'f':
      return "file";
    case 'd':
      return "dir";
    case 'l':
      return "symlink";
    default:
      return "other";
  }
}

std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

std::string ParentOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

std::optional<std::array<uint8_t, 32>> HashFile(int dir_fd, const std::string& name,
                                                uint64_t* budget_used) {
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) return std::nullopt;
  Sha256 h;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    *budget_used += static_cast<uint64_t>(n);
    h.Update(std::string_view(buf, static_cast<size_t>(n)));
  }
  return h.Finish();
}

bool SameStat(const ScanEntry& a, const ScanEntry& b) {
  return a.type == b.type && a.size == b.size && a.mode == b.mode && a.ino == b.ino &&
         a.mtime_ns == b.mtime_ns && a.ctime_ns == b.ctime_ns;
}

class Scanner {
 public:
  Scanner(const ScanOptions& options, const TreeSnapshot* before, TreeSnapshot* out)
      : options_(options), before_(before), out_(out), deadline_(Clock::now() + options.max_time) {}

  Status Run(const std::string& root) {
    root_fd_ = UniqueFd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root_fd_) return PosixError(errno, "cannot open", root);
    struct stat st;
    if (::fstat(root_fd_.get(), &st) != 0) return PosixError(errno, "cannot stat", root);
    root_dev_ = st.st_dev;
    UniqueFd first(::fcntl(root_fd_.get(), F_DUPFD_CLOEXEC, 3));
    if (!first) return PosixError(errno, "cannot duplicate", root);
    ReadDir("", std::move(first));
    while (!queue_.empty() && !out_->bound) {
      Pending next = std::move(queue_.front());
      queue_.pop_front();
      if (next.fd) --held_fds_;
      UniqueFd fd = next.fd ? std::move(next.fd) : Reopen(next.path);
      if (fd) ReadDir(next.path, std::move(fd));
    }
    return Status::Ok();
  }

 private:
  // A directory still to read; `fd` is invalid when max_open_dirs were
  // already held, and the directory is opened again by its path then.
  struct Pending {
    std::string path;
    UniqueFd fd;
  };

  // Opens a queued directory from the root, one O_NOFOLLOW component at a
  // time, and only if it is still the directory the scan listed.
  UniqueFd Reopen(const std::string& path) {
    UniqueFd cur;
    size_t begin = 0;
    while (begin <= path.size()) {
      size_t end = std::min(path.find('/', begin), path.size());
      std::string part = path.substr(begin, end - begin);
      int at = cur ? cur.get() : root_fd_.get();
      cur = UniqueFd(::openat(at, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!cur) return cur;
      begin = end + 1;
    }
    struct stat st;
    auto it = out_->entries.find(path);
    if (::fstat(cur.get(), &st) != 0 || it == out_->entries.end() || st.st_dev != root_dev_ ||
        st.st_ino != it->second.ino) {
      return UniqueFd();
    }
    return cur;
  }

  bool OverBound() {
    if (out_->entries.size() >= options_.max_entries) {
      out_->bound = LimitHit{"scan_entries", static_cast<int64_t>(options_.max_entries), "entries"};
      return true;
    }
    if ((++checks_ & 255) == 0 && Clock::now() > deadline_) {
      out_->bound = LimitHit{"scan_time", static_cast<int64_t>(options_.max_time.count()), "ms"};
      return true;
    }
    return false;
  }

  // Reads the directory `fd` whole (names sorted) unless a bound stops it.
  // Needs no descriptor beyond `fd`, which it closes.
  void ReadDir(const std::string& path, UniqueFd fd) {
    DIR* raw = ::fdopendir(fd.get());
    if (!raw) return;
    (void)fd.release();  // the DIR owns it now
    std::unique_ptr<DIR, int (*)(DIR*)> d(raw, &::closedir);
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d.get())) {
      std::string_view n = e->d_name;
      if (n != "." && n != "..") names.emplace_back(n);
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      if (OverBound()) return;
      Add(path, ::dirfd(d.get()), name);
    }
    out_->complete_dirs.insert(path);
  }

  void Add(const std::string& dir, int dir_fd, const std::string& name) {
    struct stat st;
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;  // gone
    if (options_.exclude && st.st_dev == options_.exclude->first &&
        st.st_ino == options_.exclude->second) {
      return;
    }
    std::string path = Join(dir, name);
    ScanEntry e;
    e.type = TypeOf(st.st_mode);
    e.size = e.type == 'd' ? 0 : static_cast<uint64_t>(st.st_size);
    e.mode = st.st_mode;
    e.ino = st.st_ino;
    e.mtime_ns = Ns(st.st_mtim);
    e.ctime_ns = Ns(st.st_ctim);
    if (e.type == 'f') MaybeHash(dir_fd, name, path, &e);
    out_->entries.emplace(path, e);
    if (e.type != 'd') return;
    if (st.st_dev != root_dev_) {  // another file system: listed, never entered
      out_->complete_dirs.insert(path);
      return;
    }
    if (held_fds_ >= options_.max_open_dirs) {
      queue_.push_back({path, UniqueFd()});
      return;
    }
    UniqueFd child(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!child) {  // out of descriptors, say: tried again by path in its turn
      queue_.push_back({path, UniqueFd()});
      return;
    }
    ++held_fds_;
    queue_.push_back({path, std::move(child)});
  }

  void MaybeHash(int dir_fd, const std::string& name, const std::string& path, ScanEntry* e) {
    if (e->size > kRacyHashMaxFileBytes) return;
    if (out_->hashed_bytes + e->size > kRacyHashBudgetBytes) return;
    if (before_) {
      auto it = before_->entries.find(path);
      if (it == before_->entries.end() || !it->second.hash || !SameStat(it->second, *e)) return;
    } else {
      int64_t racy_from = out_->started_ns - kRacyWindowNs;
      if (e->mtime_ns < racy_from && e->ctime_ns < racy_from) return;
    }
    e->hash = HashFile(dir_fd, name, &out_->hashed_bytes);
  }

  const ScanOptions& options_;
  const TreeSnapshot* before_;
  TreeSnapshot* out_;
  Clock::time_point deadline_;
  UniqueFd root_fd_;
  dev_t root_dev_ = 0;
  std::deque<Pending> queue_;
  size_t held_fds_ = 0;  // valid descriptors in queue_
  uint64_t checks_ = 0;
};

// A directory whose entries may be compared: read whole by both scans, or
// added (removed) whole below a comparable parent.
class Comparable {
 public:
  Comparable(const TreeSnapshot& b, const TreeSnapshot& a) : b_(b), a_(a) {}

  bool operator()(const std::string& dir) {
    if (auto it = memo_.find(dir); it != memo_.end()) return it->second;
    bool cb = b_.complete_dirs.count(dir) != 0;
    bool ca = a_.complete_dirs.count(dir) != 0;
    bool result;
    if (dir.empty()) {
      result = cb && ca;
    } else {
      bool in_b = b_.entries.count(dir) != 0;
      bool in_a = a_.entries.count(dir) != 0;
      if (in_b && in_a) {
        result = cb && ca;
      } else if (in_a) {
        result = ca && (*this)(ParentOf(dir));
      } else {
        result = cb && (*this)(ParentOf(dir));
      }
    }
    memo_[dir] = result;
    return result;
  }

 private:
  const TreeSnapshot& b_;
  const TreeSnapshot& a_;
  std::unordered_map<std::string, bool> memo_;
};

bool Modified(const ScanEntry& b, const ScanEntry& a) {
  if (b.type != a.type) return true;
  if (a.type == 'd') return (b.mode & 07777) != (a.mode & 07777);
  if (!SameStat(b, a)) return true;
  if (b.hash && a.hash) return *b.hash != *a.hash;
  return false;
}

}  // namespace

Result<TreeSnapshot> ScanTree(const std::string& root, const ScanOptions& options,
                              const TreeSnapshot* before) {
  TreeSnapshot out;
  struct timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  out.started_ns = Ns(now);
  Scanner scanner(options, before, &out);
  AGENTD_RETURN_IF_ERROR(scanner.Run(root));
  return out;
}

TreeDiff DiffTrees(const TreeSnapshot& before, const TreeSnapshot& after, size_t max_changes) {
  TreeDiff diff;
  Comparable comparable(before, after);
  std::vector<ChangedFile> all;
  for (const auto& [path, b] : before.entries) {
    auto it = after.entries.find(path);
    if (it == after.entries.end()) {
      if (comparable(ParentOf(path))) all.push_back({path, "removed", TypeName(b.type)});
    } else if (Modified(b, it->second) && comparable(ParentOf(path))) {
      all.push_back({path, "modified", TypeName(it->second.type)});
    }
  }
  for (const auto& [path, a] : after.entries) {
    if (before.entries.count(path) == 0 && comparable(ParentOf(path))) {
      all.push_back({path, "added", TypeName(a.type)});
    }
  }
  std::sort(all.begin(), all.end(),
            [](const ChangedFile& x, const ChangedFile& y) { return x.path < y.path; });
  diff.total = all.size();
  diff.bound = before.bound ? before.bound : after.bound;
  if (all.size() > max_changes) {
    all.resize(max_changes);
    if (!diff.bound)
      diff.bound = LimitHit{"answer_entries", static_cast<int64_t>(max_changes), "entries"};
  }
  diff.truncated = diff.bound.has_value();
  diff.changes = std::move(all);
  return diff;
}

std::optional<std::pair<dev_t, ino_t>> DirIdentity(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return std::make_pair(st.st_dev, st.st_ino);
}

}  // namespace agentd
