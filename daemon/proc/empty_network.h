// "network": "none" (docs/PROTOCOL.md, "No network"): the exec runs in a
// network namespace of its own whose only interface is loopback, up. A
// connect to any outside address fails at once (ENETUNREACH), while a
// server the exec starts on 127.0.0.1 is reachable from the exec itself.
//
// Creating the namespace needs CAP_SYS_ADMIN (a root daemon outside a
// default Docker seccomp profile); a probe finds out at
// start-up in a throwaway child, and a daemon that cannot answers the
// request with limit_unsupported instead of running it with network.
#pragma once

#include <string>

#include "proc/probe_child.h"

namespace agentd {

// Child side, raw system calls only (proc/child_side.h): a new network
// namespace with loopback brought up. Returns 0 or the errno.
int EnterEmptyNetwork();

// Starts the probe: a throwaway child enters an empty network.
size_t StartEmptyNetworkProbe(ProbeChildren& probes);
// Once `probes` are waited for: "" when child `i` could, else one sentence
// saying why not.
std::string EmptyNetworkVerdict(const ProbeChildren& probes, size_t i);

}  // namespace agentd
