// DaemonConfig: everything the command line sets, with its defaults.
// docs/OPERATIONS.md lists every flag; ParseFlags() and HelpText() come from
// one table (config/flags.cc), so help and parsing cannot drift apart.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "agentd/protocol/limits.h"
#include "agentd/protocol/status.h"
#include "exec/exec_options.h"
#include "log/log.h"
#include "server/limits.h"
#include "server/listen_address.h"

namespace agentd {

inline constexpr char kDefaultListen[] = "127.0.0.1:7700";

struct DaemonConfig {
  // The exec engine's options, each set by its flag here and nowhere else
  // (exec/exec_options.h): state dir, workdir, ack TTL, drain, retention,
  // exec cap, limits, default timeout, child OOM score, profiles, read-only
  // paths, disabled runtimes.
  ExecEngineOptions engine;
  std::vector<ListenAddress> listen;  // empty: kDefaultListen
  std::string token_file;
  std::string fs_root;  // empty: no confinement beyond the guest's "/"
  // Guest reuse (docs/PROTOCOL.md, "Reuse"): the trees a reset returns to
  // their golden copies (empty: the workdir, if set), and the explicit
  // golden copies, paired with the paths in order.
  std::vector<std::string> reset_paths;
  std::vector<std::string> reset_baselines;
  std::vector<std::string> reset_scratch;  // emptied by a reset
  bool reset_ipc = false;                  // System V IPC objects made since the start go too
  bool reset_overlay = false;              // --reset-overlay auto: the fast path where it mounts
  LogLevel log_level = LogLevel::kInfo;
  ServerLimits limits;
  std::chrono::milliseconds shutdown_grace{std::chrono::seconds(5)};

  int oom_score_adj = -900;  // the daemon's own (every exec's: engine.child_oom_score_adj)

  bool reset_requires_restricted = false;  // a privileged generation quarantines

  // Code runs (docs/PROTOCOL.md, "Run code").
  int64_t run_timeout_sec = 60;         // when a run gives none (clamped to 300)
  uint64_t scan_max_entries = 250'000;  // per changed-files scan
  int64_t scan_max_ms = 2000;           // per changed-files scan
  uint64_t changed_files_max = 1000;    // entries in one answer
  // Where run drivers that must be files go (run/driver_file.h); "" for
  // the state directory only.
  std::string run_driver_dir = "/run/agentd-drivers";
  int64_t max_contexts = 8;  // live stateful contexts (docs/PROTOCOL.md, "Contexts")

  // Tar uploads.
  uint64_t tar_max_entries = 65536;
  uint64_t tar_max_entry_bytes = 8ull << 30;
  uint64_t tar_max_total_bytes = 16ull << 30;

  // Watch streams and port-forwarding tunnels.
  int64_t max_watches = 64;
  int64_t watch_max_dirs = 8192;
  int64_t max_tunnels = 256;
  // PID 1 mode (docs/OPERATIONS.md, "PID 1 mode"): `agentd --init [--] CMD...`.
  bool init = false;
  bool exit_with_cmd = false;        // the workload's exit stops the daemon, with its code
  std::vector<std::string> command;  // the workload's argv; empty: none
  // USER[:GROUP] the workload runs as (an image's USER when agentd is
  // injected and runs as root); empty: the daemon's own identity.
  std::string init_user;
  // Upgrade in place (docs/OPERATIONS.md, "Upgrading"): the binary an
  // upgrade executes; empty: the path the daemon was started from.
  std::string upgrade_binary;
  // How long an upgrade waits for runs, launches, context creates and
  // resets and guest resets in progress to end (0: refused at once).
  std::chrono::milliseconds upgrade_wait{std::chrono::seconds(60)};
};

struct ParsedFlags {
  enum class Action { kRun, kHelp, kVersion, kUpgrade };
  Action action = Action::kRun;
  DaemonConfig config;
};

// Errors are invalid_request naming the flag. After `--`, or from the first
// argument that does not start with "--", the rest is the workload command
// (only with --init).
Result<ParsedFlags> ParseFlags(int argc, const char* const* argv);
std::string HelpText();

}  // namespace agentd
