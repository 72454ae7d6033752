#include "proc/probe_child.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>

#include "proc/child_side.h"
#include "proc/raw_syscall.h"

namespace agentd {
namespace {

// Enough for the steps (ApplyReadonlyMounts keeps a PATH_MAX buffer); only
// the pages the child touches are ever made.
constexpr size_t kStackBytes = 32 * 1024;

// At the bottom of the child's stack mapping, written before the clone:
// what the child runs, in memory only it and the waiting daemon see.
struct Task {
  int (*step)(const void*);
  const void* arg;
};

AGENTD_CHILD_SIDE int ProbeChild(void* task) {
  const auto* t = static_cast<const Task*>(task);
  // Every errno fits the exit status's byte. The raw call, not _exit: no
  // libc or sanitizer exit hook runs in a child sharing the daemon's memory.
  RawSyscall(SYS_exit_group, t->step(t->arg));
  __builtin_unreachable();
}

}  // namespace

size_t ProbeChildren::Start(int (*step)(const void* arg), const void* arg) {
  void* stack = ::mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) {
    return Settled(-1, std::string("cannot map a probe process's stack: ") + std::strerror(errno));
  }
  auto* task = static_cast<Task*>(stack);
  *task = Task{step, arg};
  // The child starts with every signal blocked and never unblocks one: a
  // handler of the daemon's running on the child's stack, beside the
  // daemon, would share its state. (SIGKILL ends it; a fault kills it.)
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  long pid =
      LibcClone()(ProbeChild, static_cast<char*>(stack) + kStackBytes, CLONE_VM | SIGCHLD, task);
  int clone_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) {
    ::munmap(stack, kStackBytes);
    return Settled(-1, std::string("cannot create a probe process: ") + std::strerror(clone_errno));
  }
  children_.push_back(Child{pid, -1, {}, stack});
  return children_.size() - 1;
}

size_t ProbeChildren::Settled(int err, std::string why) {
  children_.push_back(Child{-1, err, std::move(why), nullptr});
  return children_.size() - 1;
}

void ProbeChildren::WaitAll() {
  for (Child& c : children_) {
    if (c.pid < 0) continue;
    int status = 0;
    while (::waitpid(static_cast<pid_t>(c.pid), &status, __WALL) < 0 && errno == EINTR) {
    }
    c.pid = -1;
    // Gone with the child: nothing runs on it any more.
    ::munmap(c.stack, kStackBytes);
    c.stack = nullptr;
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
