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

size_t ProbeChildren::Start(int (*step)(const void* arg), const void* arg) {
  // A plain fork by raw system call: the child touches only its own copy
  // of memory and exits; libc's fork handlers have nothing to do here.
  long pid = ::syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) ProbeChild(step, arg);
  if (pid < 0)
    return Settled(-1, std::string("cannot create a probe process: ") + std::strerror(errno));
  children_.push_back(Child{pid, -1, {}});
  return children_.size() - 1;
}

size_t ProbeChildren::Settled(int err, std::string why) {
  children_.push_back(Child{-1, err, std::move(why)});
  return children_.size() - 1;
}

void ProbeChildren::WaitAll() {
  for (Child& c : children_) {
    if (c.pid < 0) continue;
    int status = 0;
    while (::waitpid(static_cast<pid_t>(c.pid), &status, __WALL) < 0 && errno == EINTR) {
    }
    c.pid = -1;
    if (WIFEXITED(status)) {
      c.err = WEXITSTATUS(status);
    } else {
      c.why = "the probe process was killed by signal " + std::to_string(WTERMSIG(status));
    }
  }
}

int ProbeChildren::Outcome(size_t i, std::string* why) const {
  const Child& c = children_.at(i);
  if (c.err < 0) *why = c.why;
  return c.err;
}

}  // namespace agentd
