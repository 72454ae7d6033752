#include "proc/user_db.h"

#include <algorithm>
#include <charconv>

#include "sys/read_file.h"
#include "sys/text_fields.h"

namespace agentd {
namespace {

template <typename Fn>
void ForEachLine(std::string_view text, Fn fn) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line[0] == '#' || line[0] == '+' || line[0] == '-') continue;
    fn(line);
  }
}

std::optional<uint32_t> ParseId(std::string_view s) {
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return n;
}

const PasswdEntry* FindUser(const UserDb& db, const std::string& spec) {
  for (const PasswdEntry& e : db.users) {
    if (e.name == spec) return &e;
  }
  std::optional<uint32_t> uid = ParseId(spec);
  if (!uid) return nullptr;
  for (const PasswdEntry& e : db.users) {
    if (e.uid == *uid) return &e;
  }
  return nullptr;
}

Result<gid_t> FindGroup(const UserDb& db, const std::string& spec) {
  for (const GroupEntry& g : db.groups) {
    if (g.name == spec) return g.gid;
  }
  if (std::optional<uint32_t> gid = ParseId(spec)) return static_cast<gid_t>(*gid);
  return Status::Error(ErrorCode::kUnknownGroup,
                       "group \"" + spec + "\" is not in the guest's /etc/group")
      .With("field", "group")
      .With("group", spec);
}

void AddGroup(std::vector<gid_t>& groups, gid_t gid) {
  if (std::find(groups.begin(), groups.end(), gid) == groups.end()) groups.push_back(gid);
}

}  // namespace

std::vector<PasswdEntry> ParsePasswd(std::string_view text) {
  std::vector<PasswdEntry> out;
  ForEachLine(text, [&](std::string_view line) {
    std::vector<std::string_view> f = SplitFields(line, ':');
    if (f.size() < 7 || f[0].empty()) return;
    std::optional<uint32_t> uid = ParseId(f[2]);
    std::optional<uint32_t> gid = ParseId(f[3]);
    if (!uid || !gid) return;
    out.push_back(PasswdEntry{std::string(f[0]), *uid, *gid, std::string(f[5])});
  });
  return out;
}

std::vector<GroupEntry> ParseGroup(std::string_view text) {
  std::vector<GroupEntry> out;
  ForEachLine(text, [&](std::string_view line) {
    std::vector<std::string_view> f = SplitFields(line, ':');
    if (f.size() < 4 || f[0].empty()) return;
    std::optional<uint32_t> gid = ParseId(f[2]);
    if (!gid) return;
    GroupEntry g{std::string(f[0]), *gid, {}};
    if (!f[3].empty()) {
      for (std::string_view m : SplitFields(f[3], ',')) {
        if (!m.empty()) g.members.emplace_back(m);
      }
    }
    out.push_back(std::move(g));
  });
  return out;
}

UserDb LoadUserDb(const char* passwd_path, const char* group_path) {
  constexpr size_t kLimit = 16 << 20;
  UserDb db;
  Result<std::string> passwd = ReadFileToString(passwd_path, kLimit);
  if (passwd.ok()) db.users = ParsePasswd(*passwd);
  Result<std::string> group = ReadFileToString(group_path, kLimit);
  if (group.ok()) db.groups = ParseGroup(*group);
  return db;
}

Result<std::optional<Credentials>> ResolveCredentials(const std::optional<std::string>& user,
                                                      const std::optional<std::string>& group,
                                                      const UserDb& db) {
  if (!user && !group) return std::optional<Credentials>();
  Credentials c;
  std::optional<gid_t> group_gid;
  if (group) {
    Result<gid_t> gid = FindGroup(db, *group);
    if (!gid.ok()) return gid.status();
    group_gid = *gid;
  }
  if (!user) {
    c.gid = *group_gid;
    c.groups = {c.gid};
    return std::optional<Credentials>(std::move(c));
  }
  if (const PasswdEntry* e = FindUser(db, *user)) {
    c.uid = e->uid;
    c.gid = group_gid.value_or(e->gid);
    c.user_name = e->name;
    c.home = e->home.empty() ? "/" : e->home;
    c.groups = {c.gid};
    for (const GroupEntry& g : db.groups) {
      if (std::find(g.members.begin(), g.members.end(), e->name) != g.members.end()) {
        AddGroup(c.groups, g.gid);
      }
    }
    return std::optional<Credentials>(std::move(c));
  }
  std::optional<uint32_t> uid = ParseId(*user);
  if (!uid) {
    return Status::Error(ErrorCode::kUnknownUser,
                         "user \"" + *user + "\" is not in the guest's /etc/passwd")
        .With("field", "user")
        .With("user", *user);
  }
  c.uid = *uid;
  c.gid = group_gid.value_or(static_cast<gid_t>(*uid));
  c.groups = {c.gid};
  c.user_name = *user;
  c.home.assign(1, '/');  // (not = "/": GCC 12 -Wrestrict false positive)
  return std::optional<Credentials>(std::move(c));
}

}  // namespace agentd
