// Suite: runs checks against one live daemon and reports them, one line
// per check and a closing "N passed, M failed" line, optionally as JUnit
// XML for CI systems.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "check.h"

namespace agentd::conformance {

struct SuiteOptions {
  client::ClientOptions client;
  std::string filter;      // substring of "area: name"; empty runs all
  std::string junit_path;  // empty: no JUnit file
  std::string scratch_root = "/tmp";
  // A guest directory on a small file system (a few MiB free), for the
  // disk-pressure checks; empty skips them.
  std::string small_fs;
  // The reuse group (destructive: resets the guest) runs only with a reset
  // path of the guest; a scratch dir and the IPC sweep are checked when the
  // guest has them (--reset-scratch, --reset-ipc or PID 1).
  std::string reuse_path;
  std::string reuse_scratch;
  bool reuse_ipc = false;
  // The reuse group's last check may leave the guest quarantined (it must
  // then restart; an immutable file stays in the reset path).
  bool reuse_quarantine = false;
  // A guest shell command that upgrades the daemon in place (agentd
  // --upgrade, or SIGUSR2 to it); empty skips the upgrade group.
  std::string upgrade_command;
};

struct CheckResult {
  std::string area;
  std::string name;
  bool passed = false;
  bool skipped = false;  // the guest lacks what the check needs; reason says what
  std::string reason;
  std::chrono::milliseconds duration{0};
};

class Suite {
 public:
  explicit Suite(SuiteOptions options);
  // Runs the selected checks; returns the process exit status (0 when all passed).
  int Run();
  const SuiteOptions& options() const { return options_; }
  const std::string& run_tag() const { return run_tag_; }
  const std::string& scratch_dir() const { return scratch_dir_; }

 private:
  void WriteJunit(const std::vector<CheckResult>& results) const;

  SuiteOptions options_;
  std::string run_tag_;
  std::string scratch_dir_;
};

}  // namespace agentd::conformance
