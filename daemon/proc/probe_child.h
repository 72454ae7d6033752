// A start-up probe: does a step the spawn child will take (a namespace, a
// mount) work for this daemon? Tried in a throwaway forked child, so the
// daemon itself never changes, and answered before any request relies on it.
#pragma once

#include <string>

namespace agentd {

// Runs `step(arg)` in a forked child (raw clone, not sharing memory) and
// returns what it returned: 0 for success, else an errno. When the child
// cannot be made or dies by a signal, returns -1 and says why in `*why`.
// `step` runs on the child side (proc/child_side.h): raw system calls only.
int RunInProbeChild(int (*step)(const void* arg), const void* arg, std::string* why);

}  // namespace agentd
