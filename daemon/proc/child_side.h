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

#define AGENTD_CHILD_SIDE __attribute__((no_sanitize("address", "undefined", "thread")))
