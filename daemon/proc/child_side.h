// Code that runs in a spawn child sharing the daemon's memory
// (CLONE_VM | CLONE_VFORK, proc/spawn.h) or in a throwaway probe child.
//
// The child runs on a stack the sanitizers never saw, until execve.
// Instrumented code there would use the parent's shadow memory, fake
// stacks and thread state, and report (or corrupt) the parent's; so the
// child side is uninstrumented, and it makes raw system calls only: a libc
// wrapper may be a sanitizer's interceptor, and those keep tables in that
// shared memory (ThreadSanitizer records signal handlers and descriptors;
// a child resetting its handlers through sigaction() would reset the
// parent's in TSan's table).
#pragma once

// Under TSan, clang's disable_sanitizer_instrumentation drops every hook,
// also the function entry and exit calls that no_sanitize("thread") keeps:
// those push onto the parent thread's TSan shadow stack, and concurrent
// holders (each a CLONE_VM child, proc/exec_holder.h) pushing onto it
// corrupted TSan's stack depot (a SEGV in StackDepot::Put under the stdin
// random kill test). Not under ASan: there it made ASan warn about the
// child's stack at each noreturn call, where no_sanitize is clean.
#if defined(__clang__)
#if __has_feature(thread_sanitizer) && __has_attribute(disable_sanitizer_instrumentation)
#define AGENTD_CHILD_SIDE __attribute__((disable_sanitizer_instrumentation))
#endif
#endif
#ifndef AGENTD_CHILD_SIDE
#define AGENTD_CHILD_SIDE __attribute__((no_sanitize("address", "undefined", "thread")))
#endif
