// DriverFile: a run driver that an interpreter must load from a real path
// (bun realpaths `--preload`, so a memfd's /proc/self/fd link cannot be
// used). The file is written by the daemon, owned by it, mode 0644, named
// after its content (`<stem>-<hash>.js`, so daemons of two versions on one
// machine never overwrite each other's driver), and checked byte for byte
// before every use: a file that differs, changed owner or mode, or became
// a link is replaced atomically (a temporary in the same directory renamed
// over it), so what one tenant did to it never reaches the next tenant's
// runs.
//
// Two places, tried in order: a shared directory every user can read
// (`/run/agentd-drivers` by default; owned by the daemon's user, not
// writable by group or others), and the daemon's private directory inside
// its 0700 state directory, which only serves runs with the daemon's own
// identity. Small synchronous file operations on each use (a stat, an open
// and a read of a few KB in the page cache), on the calling thread.
#pragma once

#include <optional>
#include <string>

namespace agentd {

class DriverFile {
 public:
  DriverFile(std::string stem, std::string content, std::string shared_dir,
             std::string private_dir);

  // The path of a verified copy the process can read: in the shared
  // directory, or (only when `same_identity`: the process runs as the
  // daemon's user) in the private one. nullopt when neither can be made;
  // why is in last_error().
  std::optional<std::string> Ensure(bool same_identity);
  const std::string& last_error() const { return last_error_; }

 private:
  bool EnsureIn(const std::string& dir, bool shared);

  std::string name_;
  std::string content_;
  std::string shared_dir_;
  std::string private_dir_;
  std::string last_error_;
};

}  // namespace agentd
