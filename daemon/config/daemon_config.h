// DaemonConfig: everything the command line sets, with its defaults.
// docs/OPERATIONS.md lists every flag; ParseFlags() and HelpText() come from
// one table (config/flags.cc), so help and parsing cannot drift apart.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "agentd/protocol/status.h"
#include "log/log.h"
#include "server/limits.h"
#include "server/listen_address.h"

namespace agentd {

inline constexpr char kDefaultListen[] = "127.0.0.1:7700";
inline constexpr char kDefaultStateDir[] = "/run/agentd";

struct DaemonConfig {
  std::vector<ListenAddress> listen;  // empty: kDefaultListen
  std::string token_file;
  std::string state_dir;  // empty: kDefaultStateDir, else $XDG_RUNTIME_DIR, else a temp dir
  int64_t ack_ttl_sec = 60;
  std::string fs_root;  // empty: no confinement beyond the guest's "/"
  std::string workdir;  // default cwd of /v1/run
  LogLevel log_level = LogLevel::kInfo;
  ServerLimits limits;
  std::chrono::milliseconds shutdown_grace{std::chrono::seconds(5)};

  // Exec engine.
  std::chrono::milliseconds output_drain{std::chrono::seconds(2)};
  uint64_t retention_stream_bytes = 256ull << 20;
  uint64_t retention_total_bytes = 1ull << 30;
  int64_t max_execs = 4096;

  // Tar uploads.
  uint64_t tar_max_entries = 65536;
  uint64_t tar_max_entry_bytes = 8ull << 30;
  uint64_t tar_max_total_bytes = 16ull << 30;

  // PID 1 mode (docs/OPERATIONS.md, "PID 1 mode"): `agentd --init [--] CMD...`.
  bool init = false;
  bool exit_with_cmd = false;        // the workload's exit stops the daemon, with its code
  std::vector<std::string> command;  // the workload's argv; empty: none
};

struct ParsedFlags {
  enum class Action { kRun, kHelp, kVersion };
  Action action = Action::kRun;
  DaemonConfig config;
};

// Errors are invalid_request naming the flag. After `--`, or from the first
// argument that does not start with "--", the rest is the workload command
// (only with --init).
Result<ParsedFlags> ParseFlags(int argc, const char* const* argv);
std::string HelpText();

}  // namespace agentd
