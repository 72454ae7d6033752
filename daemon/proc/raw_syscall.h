// A system call without libc, for code that runs beside the daemon in its
// memory (CLONE_VM children: exec holders, start-up probes): libc's
// syscall() writes errno, which is the daemon's own thread's (the child
// runs with the same thread pointer), so a child and the daemon would race
// on it. Returns the result, or -errno on failure.
#pragma once

#include "proc/child_side.h"

namespace agentd {

AGENTD_CHILD_SIDE inline long RawSyscall(long n, long a = 0, long b = 0, long c = 0, long d = 0,
                                         long e = 0, long f = 0) {
#if defined(__x86_64__)
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0"
                   : "+r"(x0)
                   : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                   : "memory");
  return x0;
#else
#error "a raw system call is needed for this architecture"
#endif
}

// libc's clone(), for a child on a stack of its own that shares the
// daemon's memory. ThreadSanitizer intercepts clone() to treat it as a
// fork, which cannot hold for CLONE_VM (its fork hook fails a CHECK in the
// child); such a child runs no instrumented code and no interceptor, so
// under TSan this is the libc function past the interceptor (proc/spawn.cc).
using CloneFn = int (*)(int (*)(void*), void*, int, void*, ...);
CloneFn LibcClone();

}  // namespace agentd
