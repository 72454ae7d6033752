// Read-only paths of restricted execs (docs/SECURITY.md, "Restricted
// execs"): the system directories, the daemon's binary and its state
// directory are bound read-only in a private mount namespace of the exec,
// so even a file the exec's user could write there is refused (EROFS).
// The daemon's own view, and every unrestricted exec's, is unchanged.
//
// The namespace is a slave of the guest's: mounts the guest makes later
// still reach the exec, the exec's binds never reach the guest. Creating
// it needs CAP_SYS_ADMIN (a root daemon outside a default Docker seccomp
// profile); a probe finds out at start-up in a throwaway
// child, so an exec never runs with less than it reports.
#pragma once

#include <string>
#include <vector>

#include "agentd/protocol/status.h"
#include "proc/probe_child.h"

namespace agentd {

// The system directories made read-only unless the operator says
// otherwise: /usr, /etc, /bin, /sbin and the /lib directories.
const std::vector<std::string>& DefaultReadonlyPaths();

// Canonical paths (symlinks resolved), none inside another one of the
// list (a recursive bind covers what lies beneath), sorted. A path in
// `optional` that does not exist is left out; one in `required` is an
// error naming it.
Result<std::vector<std::string>> ResolveReadonlyPaths(const std::vector<std::string>& optional,
                                                      const std::vector<std::string>& required);

// Child side, raw system calls only (proc/child_side.h): a new mount
// namespace, a slave of the guest's, with each path bound read-only over
// itself, submounts included. The working directory is re-entered so it
// too lies in the new view. Returns 0, or the errno of the failed step
// with `*failed` the path it failed on (nullptr: the namespace itself).
int ApplyReadonlyMounts(const char* const* paths, size_t count, const char** failed);

// Starts the probe: can this daemon apply `paths`? (A throwaway child
// tries; none for an empty list.)
size_t StartReadonlyMountsProbe(ProbeChildren& probes, const std::vector<std::string>& paths);
// Once `probes` are waited for: "" when child `i` could, else one
// sentence saying why not.
std::string ReadonlyMountsVerdict(const ProbeChildren& probes, size_t i);

}  // namespace agentd
