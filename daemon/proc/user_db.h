// The guest's users and groups, read from /etc/passwd and /etc/group by our
// own parser: a static glibc has no NSS, so getpwnam() would find nothing in
// most images. Resolves a start request's `user`/`group` into the
// credentials a child switches to (docs/PROTOCOL.md, "Start"). Parsing is
// pure; LoadUserDb() reads the two files. Any thread.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/protocol/status.h"

namespace agentd {

struct PasswdEntry {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
};

struct GroupEntry {
  std::string name;
  gid_t gid = 0;
  std::vector<std::string> members;
};

// Malformed lines, comments and NIS "+"/"-" lines are skipped.
std::vector<PasswdEntry> ParsePasswd(std::string_view text);
std::vector<GroupEntry> ParseGroup(std::string_view text);

struct UserDb {
  std::vector<PasswdEntry> users;
  std::vector<GroupEntry> groups;
};
// Missing files read as empty (an image may have neither).
UserDb LoadUserDb(const char* passwd_path = "/etc/passwd", const char* group_path = "/etc/group");

// What a child switches to. `uid` unset means "keep the daemon's user"
// (only `group` was asked for). When a user is set, `groups` is the
// initgroups() result: the primary gid plus every group listing the user,
// and HOME, USER and LOGNAME come from its passwd entry.
struct Credentials {
  std::optional<uid_t> uid;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  std::string user_name;  // for USER and LOGNAME; empty when uid is unset
  std::string home;
};

// nullopt when neither is given (the child keeps the daemon's identity).
// A name absent from the files is 400 unknown_user / unknown_group. A
// number absent from them is accepted: its primary group is the same
// number (unless `group` says otherwise), its HOME is "/", and USER and
// LOGNAME are the number.
Result<std::optional<Credentials>> ResolveCredentials(const std::optional<std::string>& user,
                                                      const std::optional<std::string>& group,
                                                      const UserDb& db);

}  // namespace agentd
