#include "proc/probe_child.h"

#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "proc/child_side.h"

namespace agentd {
namespace {

[[noreturn]] AGENTD_CHILD_SIDE void ProbeChild(int (*step)(const void*), const void* arg) {
  // Every errno fits the exit status's byte.
  ::syscall(SYS_exit_group, step(arg));
  __builtin_unreachable();
}

}  // namespace

int RunInProbeChild(int (*step)(const void* arg), const void* arg, std::string* why) {
  // A plain fork by raw system call: the child touches only its own copy
  // of memory and exits; libc's fork handlers have nothing to do here.
  long pid = ::syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (pid < 0) {
    *why = std::string("cannot create a probe process: ") + std::strerror(errno);
    return -1;
  }
  if (pid == 0) ProbeChild(step, arg);
  int status = 0;
  while (::waitpid(static_cast<pid_t>(pid), &status, __WALL) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  *why = "the probe process was killed by signal " + std::to_string(WTERMSIG(status));
  return -1;
}

}  // namespace agentd
