#include "proc/process_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <unordered_map>

#include "agentd/trees/unique_fd.h"

namespace agentd {
namespace {

std::optional<long> ParseLong(std::string_view s) {
  long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<ProcessEntry> ParseProcStat(std::string_view text) {
  // "<pid> (<comm>) <state> <ppid> ..."
  size_t open = text.find(" (");
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open + 2) {
    return std::nullopt;
  }
  std::optional<long> pid = ParseLong(text.substr(0, open));
  std::string_view rest = text.substr(close + 1);  // " S 1 ..."
  if (!pid || rest.size() < 4 || rest[0] != ' ' || rest[2] != ' ') return std::nullopt;
  rest.remove_prefix(3);
  std::optional<long> ppid = ParseLong(rest.substr(0, rest.find(' ')));
  if (!ppid) return std::nullopt;
  ProcessEntry e;
  e.pid = static_cast<pid_t>(*pid);
  e.ppid = static_cast<pid_t>(*ppid);
  e.state = text[close + 2];
  e.comm = std::string(text.substr(open + 2, close - open - 2));
  return e;
}

std::vector<ProcessEntry> DescendantsOf(pid_t root, const std::vector<pid_t>& spared,
                                        const std::vector<ProcessEntry>& all) {
  std::unordered_multimap<pid_t, const ProcessEntry*> children;
  for (const ProcessEntry& e : all) children.emplace(e.ppid, &e);
  std::vector<ProcessEntry> out;
  std::vector<pid_t> pending{root};
  while (!pending.empty()) {
    pid_t parent = pending.back();
    pending.pop_back();
    auto [begin, end] = children.equal_range(parent);
    for (auto it = begin; it != end; ++it) {
      const ProcessEntry& child = *it->second;
      if (child.pid == root) continue;  // a malformed cycle
      if (std::find(spared.begin(), spared.end(), child.pid) != spared.end()) continue;
      out.push_back(child);
      pending.push_back(child.pid);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const ProcessEntry& a, const ProcessEntry& b) { return a.pid < b.pid; });
  return out;
}

std::vector<ProcessEntry> ListProcesses() {
  std::vector<ProcessEntry> out;
  DIR* dir = ::opendir("/proc");
  if (!dir) return out;
  while (struct dirent* d = ::readdir(dir)) {
    if (d->d_name[0] < '0' || d->d_name[0] > '9') continue;
    std::string path = std::string("/proc/") + d->d_name + "/stat";
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) continue;  // it exited while we looked
    char buf[1024];
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n <= 0) continue;
    if (std::optional<ProcessEntry> e = ParseProcStat(std::string_view(buf, n))) {
      out.push_back(std::move(*e));
    }
  }
  ::closedir(dir);
  return out;
}

}  // namespace agentd
