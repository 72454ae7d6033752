#include "sys/passwd.h"

#include <charconv>
#include <fstream>
#include <vector>

namespace agentd {
namespace {

std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  for (;;) {
    size_t colon = line.find(':', start);
    if (colon == std::string_view::npos) {
      fields.push_back(line.substr(start));
      return fields;
    }
    fields.push_back(line.substr(start, colon - start));
    start = colon + 1;
  }
}

std::optional<uint32_t> ParseId(std::string_view text) {
  uint32_t n = 0;
  if (text.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return n;
}

std::string_view TrimLine(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  return line;
}

// Calls `match` on each parsed line of `path` until it returns true.
template <typename Entry, typename Parse, typename Match>
std::optional<Entry> Scan(const std::string& path, Parse parse, Match match) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::optional<Entry> e = parse(line);
    if (e && match(*e)) return e;
  }
  return std::nullopt;
}

}  // namespace

std::optional<PasswdEntry> ParsePasswdLine(std::string_view line) {
  line = TrimLine(line);
  if (line.empty() || line.front() == '#') return std::nullopt;
  std::vector<std::string_view> f = SplitFields(line);
  if (f.size() < 7 || f[0].empty()) return std::nullopt;
  std::optional<uint32_t> uid = ParseId(f[2]);
  std::optional<uint32_t> gid = ParseId(f[3]);
  if (!uid || !gid) return std::nullopt;
  return PasswdEntry{std::string(f[0]), *uid, *gid, std::string(f[5]), std::string(f[6])};
}

std::optional<GroupEntry> ParseGroupLine(std::string_view line) {
  line = TrimLine(line);
  if (line.empty() || line.front() == '#') return std::nullopt;
  std::vector<std::string_view> f = SplitFields(line);
  if (f.size() < 3 || f[0].empty()) return std::nullopt;
  std::optional<uint32_t> gid = ParseId(f[2]);
  if (!gid) return std::nullopt;
  return GroupEntry{std::string(f[0]), *gid};
}

std::optional<PasswdEntry> LookupUser(std::string_view name_or_id, const std::string& passwd_path) {
  if (std::optional<uint32_t> id = ParseId(name_or_id)) {
    std::optional<PasswdEntry> e = Scan<PasswdEntry>(
        passwd_path, ParsePasswdLine, [&](const PasswdEntry& p) { return p.uid == *id; });
    if (e) return e;
    PasswdEntry numeric;
    numeric.uid = *id;
    numeric.gid = static_cast<gid_t>(-1);  // unknown: the caller keeps the group
    return numeric;
  }
  if (name_or_id.empty()) return std::nullopt;
  return Scan<PasswdEntry>(passwd_path, ParsePasswdLine,
                           [&](const PasswdEntry& p) { return p.name == name_or_id; });
}

std::optional<GroupEntry> LookupGroup(std::string_view name_or_id, const std::string& group_path) {
  if (std::optional<uint32_t> id = ParseId(name_or_id)) return GroupEntry{"", *id};
  if (name_or_id.empty()) return std::nullopt;
  return Scan<GroupEntry>(group_path, ParseGroupLine,
                          [&](const GroupEntry& g) { return g.name == name_or_id; });
}

}  // namespace agentd
