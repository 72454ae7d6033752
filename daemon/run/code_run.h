// CodeRun: the /v1/run use case (docs/PROTOCOL.md, "Run code"): one code
// action to completion, with its output, its outcome in one line, and the
// files it changed under its working directory. The run is an exec the
// engine starts and this waits for (every exec guarantee and limit
// applies); its record is internal and discarded once the answer is built.
// The changed-files scans run on the blocking pool. Used on the io thread.
#pragma once

#include <asio.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include "agentd/protocol/run.h"
#include "exec/exec_engine.h"
#include "run/driver_file.h"

namespace agentd {

struct CodeRunOptions {
  int64_t default_timeout_sec = 60;     // when a run gives none (clamped to kMaxRunTimeoutSec)
  std::string workdir;                  // --workdir: DefaultRunCwd's first choice
  uint64_t scan_max_entries = 250'000;  // per changed-files scan
  int64_t scan_max_ms = 2000;           // per changed-files scan
  uint64_t changed_files_max = 1000;    // entries in one answer
  // Where the TypeScript driver is put for every user to read
  // (run/driver_file.h); "" for the state directory only.
  std::string shared_driver_dir = "/run/agentd-drivers";
  // Where contexts leave their notes for a daemon after a crash
  // (run/context_notes.h); "" for none.
  std::string context_notes_dir;
};

class CodeRun {
 public:
  CodeRun(ExecEngine& engine, asio::thread_pool& blocking, CodeRunOptions options);

  // Checks the request against the guest (user, runtime) before anything
  // runs, scans the working directory, starts the run, waits for it,
  // scans again and answers. `client_gone` is asked while the run waits:
  // once it says true nobody will read the answer, and the run is killed
  // rather than left to its timeout.
  asio::awaitable<Result<RunResponse>> Run(const RunRequest& request,
                                           const std::function<bool()>& client_gone);

  const CodeRunOptions& options() const { return options_; }

 private:
  ExecEngine& engine_;
  asio::thread_pool& blocking_;
  CodeRunOptions options_;
  DriverFile ts_driver_;
};

}  // namespace agentd
