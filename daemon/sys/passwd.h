// The guest's user and group databases, read from /etc/passwd and
// /etc/group directly: a static binary has no NSS, so getpwnam() would
// find nothing in most images. Only the fields the daemon needs are kept.
// Stateless; every call reads the file anew (they are small, and a guest
// may add users at any time). Thread-safe.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace agentd {

struct PasswdEntry {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
  std::string shell;
};

struct GroupEntry {
  std::string name;
  gid_t gid = 0;
};

// Parses one line of passwd(5) / group(5); nullopt for comments, blank and
// malformed lines.
std::optional<PasswdEntry> ParsePasswdLine(std::string_view line);
std::optional<GroupEntry> ParseGroupLine(std::string_view line);

// Looks a user up by name, or by number when `name_or_id` is all digits
// (a number with no entry still yields an entry with an empty name: a
// numeric owner needs no database). nullopt when unknown.
std::optional<PasswdEntry> LookupUser(std::string_view name_or_id,
                                      const std::string& passwd_path = "/etc/passwd");
std::optional<GroupEntry> LookupGroup(std::string_view name_or_id,
                                      const std::string& group_path = "/etc/group");

}  // namespace agentd
