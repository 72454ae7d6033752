// RuntimeSelfTests: does an interpreter that is present actually run?
// (docs/PROTOCOL.md, "Health": runtimes_unavailable, self_test_failed.)
//
// The PATH probe (proc/runtimes.h) sees an executable file; a broken
// install (a python3 whose standard library is gone, a bun built for
// another CPU, a wrapper script that fails) passes it and fails every
// run with an error the model cannot act on. So each interpreter file is
// run once with a trivial program (6*7, printed) the first time a check
// (a health call, a run) finds it, and again whenever that file changes (its device, inode, size
// or mtime: an upgrade, a reinstall). Until the verdict is in, the runtime
// counts as present: a test never delays a health answer or a run. A
// failed verdict holds for that file until it changes or the daemon
// restarts, and turns the check into `self_test_failed` with the reason
// (how it exited, its last line of stderr).
//
// The test child is spawned like an exec (proc/spawn.h: own session, every
// other descriptor closed, stdin /dev/null, the daemon's identity and the
// child environment with no request env, cwd "/") but is not one: no
// record, no metrics, not `busy`. Its exit comes through the Reaper; its
// output (at most a pipe's buffer) is read once it has exited. A test that
// has not ended after kTimeout is killed and fails.
//
// Used on the io thread only (like ExecEngine, which owns it).
#pragma once

#include <sys/resource.h>

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "proc/reaper.h"
#include "proc/runtimes.h"

namespace agentd {

class RuntimeSelfTests {
 public:
  enum class State { kPending, kPassed, kFailed };
  struct Verdict {
    Runtime runtime = Runtime::kShell;
    std::string program_path;
    RuntimeCheck::Identity identity;
    State state = State::kPending;
    std::string reason;  // kFailed: why, for a person or a model
    int64_t duration_ms = 0;
  };

  static constexpr std::chrono::seconds kTimeout{30};

  // `child_env` gives the environment a child with no request env gets;
  // `nofile` the RLIMIT_NOFILE children get back.
  RuntimeSelfTests(asio::io_context& io, Reaper& reaper,
                   std::function<std::vector<std::string>()> child_env,
                   std::optional<struct rlimit> nofile);
  RuntimeSelfTests(const RuntimeSelfTests&) = delete;
  RuntimeSelfTests& operator=(const RuntimeSelfTests&) = delete;

  // Applies what is known of `check`'s interpreter: a failed verdict makes
  // it self_test_failed; an interpreter not tested yet (or changed since)
  // gets its test started. A check that is not ok is left alone.
  void Apply(RuntimeCheck& check);
  // The verdict of every interpreter file tested, by path.
  std::vector<Verdict> Verdicts() const;
  // Stops arming new tests (shutdown); running ones are killed.
  void Stop();
  // Counts every change of a verdict (a file found or changed, a test
  // ended), so what is derived from Verdicts() and Apply() can be kept
  // while it stays equal (health's serialized runtime lists).
  uint64_t changes() const { return changes_; }

  static std::string_view StateName(State s);

 private:
  void Start(const std::string& path);
  void Finish(const std::string& path, int wait_status);

  struct Running;
  asio::io_context& io_;
  Reaper& reaper_;
  std::function<std::vector<std::string>()> child_env_;
  std::optional<struct rlimit> nofile_;
  std::map<std::string, Verdict> verdicts_;  // by program path
  std::map<std::string, std::shared_ptr<Running>> running_;
  bool stopped_ = false;
  uint64_t changes_ = 0;
};

}  // namespace agentd
