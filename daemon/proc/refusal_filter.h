// The restricted profile's seccomp filter (docs/SECURITY.md, "Restricted
// execs"): the system calls a tenant has no use for and that would let it
// persist past a reset or escape the guest's controls, each answered with
// EPERM (never a kill), every other call allowed.
//
// Compiled once at start-up by libseccomp into a classic BPF program the
// spawn child loads with a raw seccomp(2) call: the child of a CLONE_VM
// spawn may not allocate (spawn.h), and libseccomp allocates freely.
// Built on any thread; the result is immutable and read by the io thread.
#pragma once

#include <linux/filter.h>

#include <memory>
#include <string>
#include <vector>

#include "agentd/protocol/status.h"

namespace agentd {

struct RefusalFilter {
  std::vector<struct sock_filter> program;
  struct sock_fprog fprog {};  // points into `program`; valid while this lives
  // The refused calls this kernel architecture knows, in list order.
  std::vector<std::string> refused;
};

// Every call the filter refuses, by name, in the order docs/SECURITY.md
// lists them. clone is refused only with a namespace flag; clone3 answers
// ENOSYS instead (its flags sit in memory a filter cannot read, and ENOSYS
// makes libc fall back to clone, where the flags are checked).
const std::vector<std::string>& RefusedSyscallNames();

// Whether the kernel can load a seccomp filter at all (CONFIG_SECCOMP_FILTER).
// When not, `why` says so in one sentence.
bool SeccompFilterSupported(std::string* why);

// The compiled filter, or a Status when libseccomp cannot build it.
// Returned by pointer: `fprog` points into the object's own vector.
Result<std::unique_ptr<RefusalFilter>> BuildRefusalFilter();

}  // namespace agentd
