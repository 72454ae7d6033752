#include "search/tree_glob.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "fs/file_ops.h"
#include "search/wildmatch.h"

namespace agentd {
namespace {

std::vector<std::string_view> Components(std::string_view path) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    out.push_back(path.substr(pos, slash - pos));
    pos = slash + 1;
  }
  return out;
}

bool ByPath(const FileStat& a, const FileStat& b) { return a.path < b.path; }

}  // namespace

bool GlobCouldMatchBelow(const std::string& pattern, const std::string& dir) {
  std::vector<std::string_view> pc = Components(pattern);
  std::vector<std::string_view> dc = Components(dir);
  for (size_t i = 0; i < dc.size(); ++i) {
    if (i >= pc.size()) return false;
    if (pc[i] == "**") return true;
    if (!WildMatch(pc[i], dc[i])) return false;
  }
  return pc.size() > dc.size();
}

Result<GlobResponse> RunGlob(const ConfinedRoot& root, const RelPath& start,
                             const std::string& display, int start_fd, const GlobOptions& opts) {
  using WalkClock = std::chrono::steady_clock;
  const WalkClock::time_point started = WalkClock::now();
  const WalkClock::time_point deadline = started + opts.timeout;
  GlobResponse out;
  std::string base = display == "/" ? "" : display;
  // Kept to the first max_results by path: trimmed whenever twice that
  // many are held, so memory stays bounded whatever the tree.
  auto trim = [&]() {
    if (out.entries.size() <= opts.max_results) return;
    std::nth_element(out.entries.begin(), out.entries.begin() + static_cast<long>(opts.max_results),
                     out.entries.end(), ByPath);
    out.entries.resize(opts.max_results);
    out.truncated = true;
    out.bound = "results";
  };
  TreeWalk walk(root, start, opts.walk);
  auto visit = [&](const WalkEntry& e) -> WalkStep {
    if (WalkClock::now() >= deadline) {
      out.truncated = true;
      out.bound = "time";
      return WalkStep::kStop;
    }
    bool hit = std::any_of(opts.patterns.begin(), opts.patterns.end(),
                           [&](const std::string& p) { return WildMatch(p, e.walk_path); });
    if (hit) {
      struct stat st;
      std::optional<std::string> target;
      if (e.st) {
        st = *e.st;
      } else if (::fstatat(e.dir_fd, e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        return WalkStep::kContinue;  // gone meanwhile
      }
      if (S_ISLNK(st.st_mode)) {
        char buf[4096];
        ssize_t n = ::readlinkat(e.dir_fd, e.name.c_str(), buf, sizeof(buf));
        if (n >= 0) target = std::string(buf, static_cast<size_t>(n));
      }
      out.entries.push_back(MakeFileStat(st, base + "/" + e.walk_path, std::move(target)));
      if (out.entries.size() >= 2 * opts.max_results) trim();
    }
    if (e.type == S_IFDIR &&
        std::none_of(opts.patterns.begin(), opts.patterns.end(),
                     [&](const std::string& p) { return GlobCouldMatchBelow(p, e.walk_path); })) {
      return WalkStep::kSkip;
    }
    return WalkStep::kContinue;
  };
  AGENTD_RETURN_IF_ERROR(walk.Run(start_fd, visit));
  std::string bound = out.bound.value_or("");
  trim();
  if (bound == "time") out.bound = "time";  // the time bound, if hit, is the one named
  std::sort(out.entries.begin(), out.entries.end(), ByPath);
  out.elapsed_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(WalkClock::now() - started).count());
  return out;
}

}  // namespace agentd
