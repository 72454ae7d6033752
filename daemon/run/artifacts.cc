#include "run/artifacts.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <string_view>
#include <vector>

#include "agentd/trees/posix_error.h"
#include "agentd/trees/rel_path.h"
#include "agentd/trees/unique_fd.h"
#include "fs/file_tags.h"
#include "run/media_type.h"
#include "sys/awaitable.h"

namespace agentd {
namespace {

constexpr size_t kHashChunkBytes = 256 * 1024;

// `path` below `at`, every component opened with O_NOFOLLOW: the last with
// `leaf_flags`, the others as directories.
Result<UniqueFd> OpenBelow(int at, std::string_view path, int leaf_flags) {
  std::vector<std::string> parts = PathComponents(path);
  UniqueFd cur(::fcntl(at, F_DUPFD_CLOEXEC, 0));
  if (!cur) return PosixError(errno, "cannot duplicate a descriptor");
  for (size_t i = 0; i < parts.size(); ++i) {
    int flags = i + 1 == parts.size() ? leaf_flags : O_PATH | O_DIRECTORY;
    UniqueFd next(::openat(cur.get(), parts[i].c_str(), flags | O_NOFOLLOW | O_CLOEXEC));
    if (!next) return PosixError(errno, "cannot open", std::string(path));
    cur = std::move(next);
  }
  return cur;
}

// The artifacts directory below the cwd, reached without a symlink.
Result<UniqueFd> OpenArtifactsDir(const std::string& cwd, const std::string& dir) {
  UniqueFd cwd_fd(::open(cwd.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!cwd_fd) return PosixError(errno, "cannot open the run's cwd", cwd);
  return OpenBelow(cwd_fd.get(), dir, O_PATH | O_DIRECTORY);
}

// The answer when the directory is not one below the cwd (anymore).
ArtifactList DirRefused() {
  ArtifactList refused;
  refused.truncated = true;
  refused.bound = LimitHit{"artifacts_dir", 0, "entries"};
  return refused;
}

// Size, media type and hash of one regular file, within `budget` bytes
// of hashing (taken from it).
std::optional<Artifact> Describe(int dir_fd, const std::string& rel, const std::string& shown,
                                 uint64_t* budget, bool* over_budget) {
  Result<UniqueFd> fd = OpenBelow(dir_fd, rel, O_RDONLY | O_NONBLOCK);
  if (!fd.ok()) return std::nullopt;  // gone since the scan
  struct stat st;
  if (::fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  Artifact a;
  a.path = shown;
  a.bytes = static_cast<uint64_t>(st.st_size);
  std::string head(kSniffBytes, '\0');
  ssize_t n = ::pread(fd->get(), head.data(), head.size(), 0);
  head.resize(n > 0 ? static_cast<size_t>(n) : 0);
  a.media_type = std::string(SniffMediaType(head, a.bytes));
  if (a.bytes > *budget) {
    *over_budget = true;
    return a;
  }
  TagHasher hasher;
  std::string buf(kHashChunkBytes, '\0');
  uint64_t off = 0;
  while (true) {
    ssize_t got = ::pread(fd->get(), buf.data(), buf.size(), static_cast<off_t>(off));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return a;  // unreadable: described without a hash
    if (got == 0) break;
    hasher.Update(std::string_view(buf.data(), static_cast<size_t>(got)));
    off += static_cast<uint64_t>(got);
    if (off > *budget) {  // grew past the budget while hashed
      *over_budget = true;
      return a;
    }
  }
  *budget -= off;
  a.bytes = off;
  // A tag is "\"sha256:<64 hex>\"" (fs/file_tags.h).
  std::string tag = hasher.Finish();
  a.sha256 = tag.substr(8, 64);
  return a;
}

// The path an artifact is answered by: relative to the cwd, artifacts_dir
// first, without "." or empty components.
std::string Joined(const std::string& dir, const std::string& rel) {
  std::string out;
  for (const std::string& part : PathComponents(dir)) out += part + "/";
  return out + rel;
}

// The blocking work of Before() and After(), for RunBlocking (plain
// functions: the lambdas are built outside any coroutine frame; see
// sys/awaitable.h).
std::function<std::shared_ptr<TreeSnapshot>()> MakeBefore(const std::string& cwd,
                                                          const std::string& dir) {
  return [cwd, dir]() -> std::shared_ptr<TreeSnapshot> {
    Result<TreeSnapshot> s = SnapshotArtifactsDir(cwd, dir);
    return s.ok() ? std::make_shared<TreeSnapshot>(std::move(*s)) : nullptr;
  };
}

std::function<ArtifactList()> MakeAfter(const std::string& cwd, const std::string& dir,
                                        std::shared_ptr<TreeSnapshot> before) {
  return [cwd, dir, before]() {
    Result<TreeSnapshot> after = SnapshotArtifactsDir(cwd, dir);
    if (!before || !after.ok()) return DirRefused();
    return DescribeArtifacts(cwd, dir, *before, *after);
  };
}

}  // namespace

Result<TreeSnapshot> SnapshotArtifactsDir(const std::string& cwd, const std::string& dir) {
  Result<UniqueFd> fd = OpenArtifactsDir(cwd, dir);
  if (!fd.ok()) {
    if (fd.status().code() == ErrorCode::kNotFound) {
      TreeSnapshot empty;
      empty.complete_dirs.insert("");
      return empty;
    }
    return fd.status();
  }
  ScanOptions options;
  options.max_entries = 100'000;
  return ScanTree("/proc/self/fd/" + std::to_string(fd->get()), options);
}

ArtifactList DescribeArtifacts(const std::string& cwd, const std::string& dir,
                               const TreeSnapshot& before, const TreeSnapshot& after) {
  Result<UniqueFd> dir_fd = OpenArtifactsDir(cwd, dir);
  if (!dir_fd.ok()) return DirRefused();
  ArtifactList out;
  TreeDiff diff = DiffTrees(before, after, SIZE_MAX);
  out.bound = diff.bound;  // a scan bound: some directories were not compared
  uint64_t budget = kArtifactHashBudgetBytes;
  bool over_budget = false;
  for (const ChangedFile& c : diff.changes) {
    if (c.change == "removed" || c.type != "file") continue;
    if (out.items.size() == kMaxArtifacts) {
      out.bound = LimitHit{"artifacts", static_cast<int64_t>(kMaxArtifacts), "entries"};
      break;
    }
    std::optional<Artifact> a =
        Describe(dir_fd->get(), c.path, Joined(dir, c.path), &budget, &over_budget);
    if (a) out.items.push_back(std::move(*a));
  }
  if (over_budget && !out.bound) {
    out.bound =
        LimitHit{"artifact_hash_bytes", static_cast<int64_t>(kArtifactHashBudgetBytes), "bytes"};
  }
  out.truncated = out.bound.has_value();
  return out;
}

ArtifactScan::ArtifactScan(asio::thread_pool& blocking, std::string cwd,
                           std::optional<std::string> dir)
    : blocking_(blocking), cwd_(std::move(cwd)), dir_(std::move(dir)) {}

asio::awaitable<void> ArtifactScan::Before() {
  if (!dir_) co_return;
  std::function<std::shared_ptr<TreeSnapshot>()> scan = MakeBefore(cwd_, *dir_);
  std::shared_ptr<TreeSnapshot> before = co_await RunBlocking(blocking_, std::move(scan));
  before_ = std::move(before);
}

asio::awaitable<std::optional<ArtifactList>> ArtifactScan::After() {
  if (!dir_) co_return std::nullopt;
  std::function<ArtifactList()> work = MakeAfter(cwd_, *dir_, before_);
  ArtifactList list = co_await RunBlocking(blocking_, std::move(work));
  co_return list;
}

}  // namespace agentd
