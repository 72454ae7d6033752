// The processes beneath a process, read from /proc (docs/PROTOCOL.md,
// "Reuse"). The daemon is a child subreaper (proc/reaper.h), so everything
// an exec started, including what left its session or double-forked, stays
// beneath the daemon: this walk finds all of it. Pure reads; any thread.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentd {

struct ProcessEntry {
  pid_t pid = 0;
  pid_t ppid = 0;
  char state = '?';  // /proc/<pid>/stat's state letter ('Z' for a zombie)
  std::string comm;  // the command name (at most 15 bytes, as the kernel keeps it)
};

// Parses one /proc/<pid>/stat text; nullopt when malformed. The command
// name may hold spaces and parentheses, so it ends at the last ')'.
std::optional<ProcessEntry> ParseProcStat(std::string_view text);

// Every process beneath `root` in `all` (by parent links), except the
// subtrees rooted at `spared` pids, sorted by pid.
std::vector<ProcessEntry> DescendantsOf(pid_t root, const std::vector<pid_t>& spared,
                                        const std::vector<ProcessEntry>& all);

// Every process /proc shows now (those that vanish mid-walk are skipped).
std::vector<ProcessEntry> ListProcesses();

}  // namespace agentd
