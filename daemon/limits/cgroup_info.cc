#include "limits/cgroup_info.h"

#include <sys/stat.h>

#include <charconv>
#include <string>

#include "sys/read_file.h"
#include "sys/text_fields.h"

namespace agentd {
namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      int v = 0;
      bool ok = true;
      for (size_t j = 1; j <= 3; ++j) {
        char c = s[i + j];
        if (c < '0' || c > '7') ok = false;
        v = v * 8 + (c - '0');
      }
      if (ok) {
        out += static_cast<char>(v);
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

}  // namespace

std::vector<ProcCgroup> ParseProcCgroup(std::string_view text) {
  std::vector<ProcCgroup> out;
  for (std::string_view line : SplitFields(text, '\n')) {
    if (line.empty()) continue;
    size_t a = line.find(':');
    size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    ProcCgroup c;
    std::string_view id = line.substr(0, a);
    std::from_chars(id.data(), id.data() + id.size(), c.hierarchy);
    std::string_view controllers = line.substr(a + 1, b - a - 1);
    if (!controllers.empty()) {
      for (std::string_view name : SplitFields(controllers, ',')) c.controllers.emplace_back(name);
    }
    c.path = line.substr(b + 1);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<CgroupMount> ParseCgroupMounts(std::string_view mountinfo) {
  std::vector<CgroupMount> out;
  for (std::string_view line : SplitFields(mountinfo, '\n')) {
    // id parent major:minor root mount-point options [optional...] - fstype source super
    size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    std::vector<std::string_view> head = SplitFields(line.substr(0, dash), ' ');
    std::vector<std::string_view> tail = SplitFields(line.substr(dash + 3), ' ');
    if (head.size() < 5 || tail.size() < 3) continue;
    CgroupMount m;
    if (tail[0] == "cgroup2") {
      m.v2 = true;
    } else if (tail[0] != "cgroup") {
      continue;
    }
    m.root = Unescape(head[3]);
    m.mount_point = Unescape(head[4]);
    if (!m.v2) {
      for (std::string_view opt : SplitFields(tail[2], ',')) {
        if (opt == "rw" || opt == "ro" || opt.find('=') != std::string_view::npos) continue;
        m.controllers.emplace_back(opt);
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::optional<long long> FlatKeyedValue(std::string_view text, std::string_view key) {
  for (std::string_view line : SplitFields(text, '\n')) {
    if (line.size() <= key.size() || !line.starts_with(key) || line[key.size()] != ' ') continue;
    std::string_view v = line.substr(key.size() + 1);
    long long n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec == std::errc()) return n;
  }
  return std::nullopt;
}

std::optional<CgroupEvents> ParseCgroupEvents(std::string_view text) {
  std::optional<long long> populated = FlatKeyedValue(text, "populated");
  if (!populated) return std::nullopt;
  CgroupEvents e;
  e.populated = *populated != 0;
  e.frozen = FlatKeyedValue(text, "frozen").value_or(0) != 0;
  return e;
}

std::string JoinPath(std::string_view a, std::string_view b) {
  while (!a.empty() && a.back() == '/') a.remove_suffix(1);
  while (!b.empty() && b.front() == '/') b.remove_prefix(1);
  if (b.empty()) return a.empty() ? "/" : std::string(a);
  return std::string(a) + "/" + std::string(b);
}

bool InInitialPidNamespace() {
  Result<std::string> comm = ReadFileToString("/proc/2/comm", 64);
  if (!comm.ok() || *comm != "kthreadd\n") return false;
  struct stat own, kthreadd;
  if (::stat("/proc/self/ns/pid", &own) != 0 || ::stat("/proc/2/ns/pid", &kthreadd) != 0) {
    return false;
  }
  return own.st_ino == kthreadd.st_ino && own.st_dev == kthreadd.st_dev;
}

}  // namespace agentd
