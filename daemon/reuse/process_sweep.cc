#include "reuse/process_sweep.h"

#include <signal.h>
#include <unistd.h>

#include <unordered_set>

#include "proc/process_tree.h"
#include "sys/awaitable.h"

namespace agentd {
namespace {

std::vector<ProcessEntry> Beneath(const std::vector<pid_t>& spared) {
  return DescendantsOf(::getpid(), spared, ListProcesses());
}

}  // namespace

std::vector<ResetRemaining> ProcessesLeft(const std::vector<pid_t>& spared) {
  std::vector<ResetRemaining> out;
  for (const ProcessEntry& p : Beneath(spared)) {
    out.push_back({"process", "pid " + std::to_string(p.pid) + " (" + p.comm + ")",
                   std::string("still present after SIGKILL (state ") + p.state + ")"});
  }
  return out;
}

asio::awaitable<SweepResult> SweepProcesses(Reaper& reaper, const std::vector<pid_t>& spared,
                                            std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  asio::steady_timer pause(co_await asio::this_coro::executor);
  std::unordered_set<pid_t> killed;
  for (;;) {
    reaper.ReapAll();  // our own dead children, so they leave /proc
    std::vector<ProcessEntry> left = Beneath(spared);
    if (left.empty() || std::chrono::steady_clock::now() >= deadline) break;
    for (const ProcessEntry& p : left) {
      if (p.state == 'Z') continue;  // dead already; its parent or we reap it
      if (::kill(p.pid, SIGKILL) == 0) killed.insert(p.pid);
    }
    // Dying takes the kernel a moment; SIGCHLD also wakes the Reaper.
    pause.expires_after(std::chrono::milliseconds(2));
    co_await pause.async_wait(kUseNothrow);
  }
  SweepResult result;
  result.killed = static_cast<int64_t>(killed.size());
  result.remaining = ProcessesLeft(spared);
  co_return result;
}

}  // namespace agentd
