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
  std::vector<ListenAddress> listen;  // empty: kDefaultListen
  std::string token_file;
  std::string state_dir;  // empty: kDefaultStateDir, else $XDG_RUNTIME_DIR, else a temp dir
  int64_t ack_ttl_sec = 60;
  std::string fs_root;  // empty: no confinement beyond the guest's "/"
  std::string workdir;  // default cwd of /v1/run
  // Guest reuse (docs/PROTOCOL.md, "Reuse"): the trees a reset returns to
  // their golden copies (empty: the workdir, if set), and the explicit
  // golden copies, paired with the paths in order.
  std::vector<std::string> reset_paths;
  std::vector<std::string> reset_baselines;
  std::vector<std::string> reset_scratch;  // emptied by a reset
  bool reset_ipc = false;                  // System V IPC objects made since the start go too
  LogLevel log_level = LogLevel::kInfo;
  ServerLimits limits;
  std::chrono::milliseconds shutdown_grace{std::chrono::seconds(5)};

  // Exec engine.
  std::chrono::milliseconds output_drain{std::chrono::seconds(2)};
  uint64_t retention_stream_bytes = 256ull << 20;
  uint64_t retention_total_bytes = 1ull << 30;
  int64_t max_execs = 4096;

  // Limits (docs/PROTOCOL.md, "Limits"; docs/OPERATIONS.md).
  std::string limits_mode = "auto";  // auto | cgroup2 | cgroup1 | rlimit
  ExecLimits default_limits;         // for execs and runs that do not set them
  int64_t default_timeout_sec = 0;   // execs; 0: none
  int oom_score_adj = -900;          // the daemon's own
  int child_oom_score_adj = 500;     // every exec's

  // Profiles (docs/SECURITY.md, "Restricted execs").
  std::string default_profile = "unrestricted";
  std::string default_egress;  // "" | public | allow | none | all
  std::string restricted_user = "nobody";
  bool reset_requires_restricted = false;   // a privileged generation quarantines
  std::vector<std::string> readonly_paths;  // --readonly-path: must be applied
  bool default_readonly_paths = true;       // --no-default-readonly-paths clears it

  // Code runs (docs/PROTOCOL.md, "Run code").
  int64_t run_timeout_sec = 60;            // when a run gives none (clamped to 300)
  uint64_t scan_max_entries = 250'000;     // per changed-files scan
  int64_t scan_max_ms = 2000;              // per changed-files scan
  uint64_t changed_files_max = 1000;       // entries in one answer
  std::vector<Runtime> disabled_runtimes;  // --disable-runtime

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
};

// The engine's share of the configuration (exec/exec_options.h).
inline ExecEngineOptions EngineOptionsOf(const DaemonConfig& c) {
  return ExecEngineOptions{.state_dir = c.state_dir,
                           .workdir = c.workdir,
                           .ack_ttl_sec = c.ack_ttl_sec,
                           .output_drain = c.output_drain,
                           .retention_stream_bytes = c.retention_stream_bytes,
                           .retention_total_bytes = c.retention_total_bytes,
                           .max_execs = c.max_execs,
                           .limits_mode = c.limits_mode,
                           .default_limits = c.default_limits,
                           .default_timeout_sec = c.default_timeout_sec,
                           .child_oom_score_adj = c.child_oom_score_adj,
                           .default_profile = c.default_profile,
                           .restricted_user = c.restricted_user,
                           .readonly_paths = c.readonly_paths,
                           .default_readonly_paths = c.default_readonly_paths,
                           .disabled_runtimes = c.disabled_runtimes,
                           .default_egress = c.default_egress};
}

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
