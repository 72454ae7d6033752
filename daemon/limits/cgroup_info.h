// What the kernel says about cgroups, parsed (no I/O here, so the parsers
// are unit-tested on recorded text): the daemon's own cgroup in each
// hierarchy (/proc/self/cgroup) and where the hierarchies are mounted
// (/proc/self/mountinfo). Any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentd {

// One line of /proc/self/cgroup: "4:memory:/a/b" or "0::/a" (cgroup2).
struct ProcCgroup {
  int hierarchy = 0;
  std::vector<std::string> controllers;  // empty for the cgroup2 line
  std::string path;
};
std::vector<ProcCgroup> ParseProcCgroup(std::string_view text);

// One cgroup or cgroup2 mount of /proc/self/mountinfo.
struct CgroupMount {
  std::string mount_point;
  std::string root;  // the hierarchy path mounted there ("/" usually)
  bool v2 = false;
  std::vector<std::string> controllers;  // v1: from the super options
};
std::vector<CgroupMount> ParseCgroupMounts(std::string_view mountinfo);

// The counter `key` of a flat-keyed file ("oom_kill 3\nmax 0\n"); nullopt
// when absent.
std::optional<long long> FlatKeyedValue(std::string_view text, std::string_view key);

// A cgroup2 group's cgroup.events ("populated 1\nfrozen 0\n"): populated
// while the group or any beneath it holds a live process; frozen once a
// cgroup.freeze took effect (absent before Linux 5.2: false). nullopt
// without a populated line (not a cgroup.events text).
struct CgroupEvents {
  bool populated = false;
  bool frozen = false;
};
std::optional<CgroupEvents> ParseCgroupEvents(std::string_view text);

// "a/b" + "/c" joined with exactly one slash.
std::string JoinPath(std::string_view a, std::string_view b);

// Whether this process is in the initial PID namespace, where kill(pid, 0)
// answers for every process of the machine. Only there can a group named
// after a daemon's pid ("agentd-<pid>") be judged dead by that pid: from a
// child namespace (PID 1 mode, `unshare --pid`, a rootfs guest) the other
// daemons' pids are not visible, and their idle groups looked dead. True
// when /proc/2 is kthreadd (kernel threads live only in the initial
// namespace) and in this process's namespace; false when that cannot be
// read, so a start-up sweep is skipped rather than guessed.
bool InInitialPidNamespace();

}  // namespace agentd
