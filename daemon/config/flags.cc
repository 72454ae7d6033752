#include <charconv>
#include <functional>
#include <string>

#include "agentd/protocol/exec.h"
#include "agentd/protocol/runtime.h"
#include "config/daemon_config.h"

namespace agentd {
namespace {

struct Flag {
  const char* name;     // without the leading "--"
  const char* metavar;  // nullptr for a switch that takes no value
  const char* help;
  std::function<Status(DaemonConfig&, std::string_view)> apply;
};

Status BadValue(std::string_view flag, std::string_view value, std::string_view expected) {
  return Status::InvalidRequest("--" + std::string(flag) + ": \"" + std::string(value) +
                                "\" is not " + std::string(expected))
      .With("flag", std::string(flag));
}

// Where a flag's value goes: a field of the daemon's configuration, or of
// the engine's options inside it (one home per option). One type for both,
// so each helper below is one function per value type, not per struct.
template <typename T>
struct Field {
  Field(T DaemonConfig::*f) : config(f) {}       // NOLINT: converts on purpose
  Field(T ExecEngineOptions::*f) : engine(f) {}  // NOLINT
  T& In(DaemonConfig& c) const { return config ? c.*config : c.engine.*engine; }
  T DaemonConfig::*config = nullptr;
  T ExecEngineOptions::*engine = nullptr;
};

template <typename T>
std::function<Status(DaemonConfig&, std::string_view)> Integer(const char* name, Field<T> field,
                                                               T min, T max) {
  return [=](DaemonConfig& c, std::string_view v) {
    T n{};
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < min || n > max) {
      return BadValue(name, v,
                      "an integer from " + std::to_string(min) + " to " + std::to_string(max));
    }
    field.In(c) = n;
    return Status::Ok();
  };
}

std::function<Status(DaemonConfig&, std::string_view)> Millis(
    const char* name, Field<std::chrono::milliseconds> field, int64_t max_ms) {
  return [=](DaemonConfig& c, std::string_view v) {
    int64_t n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < 0 || n > max_ms) {
      return BadValue(name, v, "a number of milliseconds up to " + std::to_string(max_ms));
    }
    field.In(c) = std::chrono::milliseconds(n);
    return Status::Ok();
  };
}

std::function<Status(DaemonConfig&, std::string_view)> LimitMillis(
    const char* name, std::chrono::milliseconds ServerLimits::*field) {
  return [=](DaemonConfig& c, std::string_view v) {
    int64_t n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < 1 || n > 86'400'000) {
      return BadValue(name, v, "a number of milliseconds from 1 to 86400000");
    }
    c.limits.*field = std::chrono::milliseconds(n);
    return Status::Ok();
  };
}

std::function<Status(DaemonConfig&, std::string_view)> LimitSize(const char* name,
                                                                 size_t ServerLimits::*field) {
  return [=](DaemonConfig& c, std::string_view v) {
    size_t n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < 1) {
      return BadValue(name, v, "a positive integer");
    }
    c.limits.*field = n;
    return Status::Ok();
  };
}

std::function<Status(DaemonConfig&, std::string_view)> Text(Field<std::string> field) {
  return [=](DaemonConfig& c, std::string_view v) {
    field.In(c) = v;
    return Status::Ok();
  };
}

std::function<Status(DaemonConfig&, std::string_view)> LimitDefault(
    const char* name, std::optional<int64_t> ExecLimits::*field, int64_t min, int64_t max) {
  return [=](DaemonConfig& c, std::string_view v) {
    int64_t n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < 0 || n > max || (n > 0 && n < min)) {
      return BadValue(
          name, v,
          "0 (no limit) or an integer from " + std::to_string(min) + " to " + std::to_string(max));
    }
    if (n == 0) {
      c.engine.default_limits.*field = std::nullopt;
    } else {
      c.engine.default_limits.*field = n;
    }
    return Status::Ok();
  };
}

const std::vector<Flag>& Flags() {
  static const std::vector<Flag> flags = {
      {"listen", "ADDR",
       "Listen on ADDR: HOST:PORT, unix:/path or vsock:PORT. Repeatable. Default 127.0.0.1:7700.",
       [](DaemonConfig& c, std::string_view v) {
         Result<ListenAddress> a = ListenAddress::Parse(v);
         if (!a.ok()) return a.status();
         c.listen.push_back(std::move(*a));
         return Status::Ok();
       }},
      {"token-file", "FILE",
       "Read the bearer token from FILE (root-only); the daemon starts bootstrapped.",
       Text(&DaemonConfig::token_file)},
      {"state-dir", "DIR",
       "Exec records and output spool. Default /run/agentd, else $XDG_RUNTIME_DIR/agentd, "
       "else a temporary directory.",
       Text(&ExecEngineOptions::state_dir)},
      {"ack-ttl-sec", "N", "Seconds an acked exec's record and output are kept. Default 60.",
       Integer<int64_t>("ack-ttl-sec", &ExecEngineOptions::ack_ttl_sec, 0, 7 * 86400)},
      {"fs-root", "DIR", "Confine every file and tree path to DIR.", Text(&DaemonConfig::fs_root)},
      {"workdir", "DIR", "Working directory of /v1/run when a run names none.",
       Text(&ExecEngineOptions::workdir)},
      {"disable-runtime", "NAME",
       "Refuse /v1/run and exec runtime NAME (shell, python or ts) even where its interpreter "
       "is installed; health lists it as disabled_by_flag. Repeatable.",
       [](DaemonConfig& c, std::string_view v) {
         std::optional<Runtime> r = ParseRuntime(v);
         if (!r) return BadValue("disable-runtime", v, "one of shell, python, ts");
         c.engine.disabled_runtimes.push_back(*r);
         return Status::Ok();
       }},
      {"reset-path", "DIR",
       "A tree POST /v1/reset returns to its golden copy (its contents at the first start, "
       "kept in the state dir). Repeatable. Default: the --workdir, if set.",
       [](DaemonConfig& c, std::string_view v) {
         if (v.empty() || v[0] != '/' || v == "/") {
           return BadValue("reset-path", v, "an absolute path of a directory other than /");
         }
         c.reset_paths.emplace_back(v);
         return Status::Ok();
       }},
      {"reset-baseline", "DIR",
       "The golden copy of the n-th --reset-path (instead of its contents at start). "
       "Repeatable, paired in order.",
       [](DaemonConfig& c, std::string_view v) {
         if (v.empty() || v[0] != '/') return BadValue("reset-baseline", v, "an absolute path");
         c.reset_baselines.emplace_back(v);
         return Status::Ok();
       }},
      {"reset-scratch", "DIR",
       "A directory POST /v1/reset empties (the directory stays): /tmp, /var/tmp, and "
       "/dev/shm for POSIX shared memory and semaphores. Repeatable.",
       [](DaemonConfig& c, std::string_view v) {
         if (v.empty() || v[0] != '/' || v == "/") {
           return BadValue("reset-scratch", v, "an absolute path of a directory other than /");
         }
         c.reset_scratch.emplace_back(v);
         return Status::Ok();
       }},
      {"reset-overlay", "MODE",
       "auto: where the daemon is root and the kernel has overlayfs, each reset path is an "
       "overlay on its golden copy with its writes on a tmpfs (memory), and a reset swaps "
       "that upper layer; elsewhere a reset restores by copying. off: always by copying. "
       "Default off.",
       [](DaemonConfig& c, std::string_view v) {
         if (v != "auto" && v != "off") return BadValue("reset-overlay", v, "auto or off");
         c.reset_overlay = v == "auto";
         return Status::Ok();
       }},
      {"reset-cgroup", "MODE",
       "auto: where cgroup2 is mounted and writable, every exec of a tenant generation runs "
       "in one cgroup the daemon owns, and POST /v1/reset ends them all with cgroup.kill "
       "(or freeze, kill, thaw) and waits for the group to empty; elsewhere, and with off, "
       "by the walk of the processes beneath the daemon (a subreaper). Default auto.",
       [](DaemonConfig& c, std::string_view v) {
         if (v != "auto" && v != "off") return BadValue("reset-cgroup", v, "auto or off");
         c.engine.reset_cgroup = v == "auto";
         return Status::Ok();
       }},
      {"reset-ipc", nullptr,
       "POST /v1/reset removes every System V IPC object (shared memory, message queue, "
       "semaphore set) made since the daemon started. For a daemon in the guest's own IPC "
       "namespace; on by default when the daemon is PID 1.",
       [](DaemonConfig& c, std::string_view) {
         c.reset_ipc = true;
         return Status::Ok();
       }},
      {"log-level", "LEVEL", "debug, info, warn or error. Default info.",
       [](DaemonConfig& c, std::string_view v) {
         auto level = ParseLogLevel(v);
         if (!level) return BadValue("log-level", v, "one of debug, info, warn, error");
         c.log_level = *level;
         return Status::Ok();
       }},
      {"max-connections", "N", "Open connections beyond which new ones get 503. Default 1024.",
       LimitSize("max-connections", &ServerLimits::max_connections)},
      {"max-header-bytes", "N", "Request head size limit (431 beyond). Default 16384.",
       LimitSize("max-header-bytes", &ServerLimits::max_header_bytes)},
      {"max-json-body-bytes", "N", "JSON request body limit (413 beyond). Default 1048576.",
       LimitSize("max-json-body-bytes", &ServerLimits::max_json_body_bytes)},
      {"idle-timeout-ms", "MS", "Keep-alive idle timeout. Default 120000.",
       LimitMillis("idle-timeout-ms", &ServerLimits::idle_timeout)},
      {"header-timeout-ms", "MS", "Time allowed to send a request head. Default 10000.",
       LimitMillis("header-timeout-ms", &ServerLimits::header_timeout)},
      {"io-timeout-ms", "MS", "Longest stall of a body read or response write. Default 60000.",
       LimitMillis("io-timeout-ms", &ServerLimits::io_timeout)},
      {"shutdown-grace-ms", "MS",
       "On SIGTERM, how long requests in flight may finish. Default 5000.",
       Millis("shutdown-grace-ms", &DaemonConfig::shutdown_grace, 600'000)},
      {"output-drain-ms", "MS",
       "After an exec's leader exits, how long to wait for its output streams to close. "
       "Default 2000.",
       Millis("output-drain-ms", &ExecEngineOptions::output_drain, 600'000)},
      {"retention-stream-bytes", "N",
       "Output bytes retained per stream of an exec. Default 268435456.",
       Integer<uint64_t>("retention-stream-bytes", &ExecEngineOptions::retention_stream_bytes, 4096,
                         UINT64_MAX)},
      {"retention-total-bytes", "N", "Output bytes retained over all execs. Default 1073741824.",
       Integer<uint64_t>("retention-total-bytes", &ExecEngineOptions::retention_total_bytes, 4096,
                         UINT64_MAX)},
      {"max-execs", "N", "Exec records held at once (503 beyond). Default 4096.",
       Integer<int64_t>("max-execs", &ExecEngineOptions::max_execs, 1, 1'000'000)},
      {"exec-holder", "on|off",
       "Spawn each exec (not runs) under a "
       "holder process that keeps it running, its output and its exit status through a "
       "daemon crash; off: a crash ends them as daemon_restart. Default on.",
       [](DaemonConfig& c, std::string_view v) {
         if (v != "on" && v != "off") return BadValue("exec-holder", v, "on or off");
         c.engine.exec_holder = v == "on";
         return Status::Ok();
       }},
      {"state-sync", "MODE",
       "When exec records are fsynced: none, batch (together, at most every 50 ms) or always "
       "(each at once); a daemon crash loses nothing in any mode. Default batch.",
       [](DaemonConfig& c, std::string_view v) {
         constexpr std::string_view kModes[] = {"none", "batch", "always"};
         for (int i = 0; i < 3; ++i) {
           if (v == kModes[i]) {
             c.engine.state_sync = static_cast<StateSyncMode>(i);
             return Status::Ok();
           }
         }
         return BadValue("state-sync", v, "one of none, batch, always");
       }},
      {"limits", "MODE",
       "How exec limits are enforced: auto (cgroup2, else cgroup1, else rlimits), cgroup2, "
       "cgroup1 or rlimit. Default auto.",
       [](DaemonConfig& c, std::string_view v) {
         if (v != "auto" && v != "cgroup2" && v != "cgroup1" && v != "rlimit") {
           return BadValue("limits", v, "one of auto, cgroup2, cgroup1, rlimit");
         }
         c.engine.limits_mode = v;
         return Status::Ok();
       }},
      {"default-timeout-sec", "N", "Wall-clock limit of execs that set none; 0: none. Default 0.",
       Integer<int64_t>("default-timeout-sec", &ExecEngineOptions::default_timeout_sec, 0,
                        kMaxTimeoutSec)},
      {"default-memory-mb", "N", "Memory limit (MiB) of execs and runs that set none; 0: none.",
       LimitDefault("default-memory-mb", &ExecLimits::memory_mb, 1, kMaxMemoryMb)},
      {"default-pids", "N", "Process limit of execs and runs that set none; 0: none.",
       LimitDefault("default-pids", &ExecLimits::pids, 1, kMaxPids)},
      {"default-cpu-sec", "N", "CPU time limit (s) of execs and runs that set none; 0: none.",
       LimitDefault("default-cpu-sec", &ExecLimits::cpu_sec, 1, kMaxCpuSec)},
      {"default-file-size-mb", "N",
       "File size limit (MiB) of execs and runs that set none; 0: none.",
       LimitDefault("default-file-size-mb", &ExecLimits::file_size_mb, 1, kMaxFileSizeMb)},
      {"oom-score-adj", "N", "The daemon's own oom_score_adj. Default -900.",
       Integer<int>("oom-score-adj", &DaemonConfig::oom_score_adj, -1000, 1000)},
      {"child-oom-score-adj", "N", "Every exec's oom_score_adj. Default 500.",
       Integer<int>("child-oom-score-adj", &ExecEngineOptions::child_oom_score_adj, -1000, 1000)},
      {"default-profile", "PROFILE",
       "Profile of execs and runs that name none: unrestricted or restricted (another user, "
       "no capabilities, no_new_privs, a seccomp filter; docs/SECURITY.md). Default "
       "unrestricted.",
       [](DaemonConfig& c, std::string_view v) {
         if (v != kProfileUnrestricted && v != kProfileRestricted) {
           return BadValue("default-profile", v, "one of unrestricted, restricted");
         }
         c.engine.default_profile = v;
         return Status::Ok();
       }},
      {"default-egress", "MODE",
       "Egress policy of execs and runs that set no \"egress\": public (no private, "
       "link-local or metadata destinations), none (loopback only) or all (everything, "
       "counted); docs/PROTOCOL.md, \"Egress\". Default unset (no policy).",
       [](DaemonConfig& c, std::string_view v) {
         if (v != "public" && v != "none" && v != "all") {
           return BadValue("default-egress", v, "one of public, none, all");
         }
         c.engine.default_egress = v;
         return Status::Ok();
       }},
      {"egress-enforcer", "RUNG",
       "What enforces egress policies: auto (cgroup-BPF programs where the kernel and "
       "privileges allow, else nftables rules), bpf or nftables (that rung only; egress "
       "is refused where it does not work); docs/SECURITY.md, \"Egress\". Default auto.",
       [](DaemonConfig& c, std::string_view v) {
         if (v != "auto" && v != "bpf" && v != "nftables") {
           return BadValue("egress-enforcer", v, "one of auto, bpf, nftables");
         }
         c.engine.egress_enforcer = v;
         return Status::Ok();
       }},
      {"restricted-user", "USER",
       "The user (a name or number, not root) restricted execs run as unless the request "
       "names one; it must exist in the guest. Default nobody.",
       [](DaemonConfig& c, std::string_view v) {
         if (v.empty() || v == "root" || v == "0" || v.find('\0') != std::string_view::npos ||
             v.find(':') != std::string_view::npos) {
           return BadValue("restricted-user", v, "a user name or number other than root");
         }
         c.engine.restricted_user = v;
         return Status::Ok();
       }},
      {"run-driver-dir", "DIR",
       "Where the TypeScript run driver is written for every user to read (owned by the "
       "daemon's user, not writable by others; made if missing). An empty value keeps it "
       "in the state directory, where only runs as the daemon's own user can load it. "
       "Default /run/agentd-drivers.",
       [](DaemonConfig& c, std::string_view v) {
         if (!v.empty() && (v[0] != '/' || v.find('\0') != std::string_view::npos)) {
           return BadValue("run-driver-dir", v, "an absolute path, or empty");
         }
         c.run_driver_dir = v;
         return Status::Ok();
       }},
      {"restricted-without-seccomp", nullptr,
       "On a kernel that cannot load seccomp filters, run restricted execs without the "
       "filter (user, no capabilities, no_new_privs, read-only paths still apply; each "
       "reports \"seccomp\": false) instead of refusing them. No effect where the filter "
       "loads.",
       [](DaemonConfig& c, std::string_view) {
         c.engine.restricted_without_seccomp = true;
         return Status::Ok();
       }},
      {"readonly-path", "PATH",
       "A file or directory restricted execs see read-only (a bind in their own mount "
       "namespace), on top of the defaults; the daemon does not start when it cannot "
       "apply it. Repeatable.",
       [](DaemonConfig& c, std::string_view v) {
         if (v.empty() || v[0] != '/' || v.find('\0') != std::string_view::npos) {
           return BadValue("readonly-path", v, "an absolute path");
         }
         c.engine.readonly_paths.emplace_back(v);
         return Status::Ok();
       }},
      {"no-default-readonly-paths", nullptr,
       "Restricted execs see only the --readonly-path list read-only, not the defaults "
       "(/usr, /etc, /bin, /sbin, /lib*, the daemon's binary and state directory).",
       [](DaemonConfig& c, std::string_view) {
         c.engine.default_readonly_paths = false;
         return Status::Ok();
       }},
      {"reset-requires-restricted", nullptr,
       "A reset quarantines the guest instead of calling it clean when an exec of the "
       "generation ran unrestricted as root (docs/SECURITY.md).",
       [](DaemonConfig& c, std::string_view) {
         c.reset_requires_restricted = true;
         return Status::Ok();
       }},
      {"run-timeout-sec", "N",
       "Wall-clock limit of /v1/run when the request sets none (at most 300). Default 60.",
       Integer<int64_t>("run-timeout-sec", &DaemonConfig::run_timeout_sec, 1, 300)},
      {"scan-max-entries", "N",
       "Entries one changed-files scan of /v1/run reads at most. Default 250000.",
       Integer<uint64_t>("scan-max-entries", &DaemonConfig::scan_max_entries, 1, 100'000'000)},
      {"scan-max-ms", "MS", "Time one changed-files scan of /v1/run takes at most. Default 2000.",
       Integer<int64_t>("scan-max-ms", &DaemonConfig::scan_max_ms, 1, 600'000)},
      {"changed-files-max", "N", "changed_files entries in one /v1/run answer. Default 1000.",
       Integer<uint64_t>("changed-files-max", &DaemonConfig::changed_files_max, 0, 1'000'000)},
      {"max-contexts", "N",
       "Live stateful contexts (persistent interpreters) at once; 503 too_many_contexts "
       "beyond. Default 8.",
       Integer<int64_t>("max-contexts", &DaemonConfig::max_contexts, 1, 1000)},
      {"tar-max-entries", "N", "Members of one uploaded archive. Default 65536.",
       Integer<uint64_t>("tar-max-entries", &DaemonConfig::tar_max_entries, 1, UINT64_MAX)},
      {"tar-max-entry-bytes", "N", "Size of one archive member. Default 8 GiB.",
       Integer<uint64_t>("tar-max-entry-bytes", &DaemonConfig::tar_max_entry_bytes, 0, UINT64_MAX)},
      {"tar-max-total-bytes", "N", "Total size of one uploaded archive. Default 16 GiB.",
       Integer<uint64_t>("tar-max-total-bytes", &DaemonConfig::tar_max_total_bytes, 0, UINT64_MAX)},
      {"max-watches", "N", "File system watch streams served at once (503 beyond). Default 64.",
       Integer<int64_t>("max-watches", &DaemonConfig::max_watches, 1, 100'000)},
      {"watch-max-dirs", "N", "Directories one recursive watch follows. Default 8192.",
       Integer<int64_t>("watch-max-dirs", &DaemonConfig::watch_max_dirs, 1, 10'000'000)},
      {"max-tunnels", "N", "Port-forwarding tunnels open at once (503 beyond). Default 256.",
       Integer<int64_t>("max-tunnels", &DaemonConfig::max_tunnels, 1, 100'000)},
      {"init", nullptr,
       "PID 1 mode: reap every orphan, run CMD (after the flags or --) as a child, forward "
       "SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to its process group; SIGTERM "
       "and SIGINT also stop the daemon once CMD has exited.",
       [](DaemonConfig& c, std::string_view) {
         c.init = true;
         return Status::Ok();
       }},
      {"exit-with-cmd", nullptr,
       "With --init: when CMD exits, stop the daemon and exit with CMD's exit code.",
       [](DaemonConfig& c, std::string_view) {
         c.exit_with_cmd = true;
         return Status::Ok();
       }},
      {"init-user", "USER[:GROUP]",
       "With --init: run CMD as USER (a name or number) and GROUP, as Docker's USER does; "
       "the daemon keeps its own identity.",
       [](DaemonConfig& c, std::string_view v) {
         if (v.empty() || v.front() == ':' || v.back() == ':') {
           return BadValue("init-user", v, "USER or USER:GROUP");
         }
         c.init_user = std::string(v);
         return Status::Ok();
       }},
      {"upgrade-binary", "PATH",
       "The binary an upgrade in place executes. Default: the path the daemon was started "
       "from, as it is on disk at the time of the upgrade.",
       Text(&DaemonConfig::upgrade_binary)},
      {"upgrade-wait-ms", "MS",
       "How long an upgrade in place waits for work it cannot hand over midway (a /v1/run, a "
       "context's run, create or reset, an exec's launch, a guest reset) to end; new such work "
       "waits behind it. Past this the upgrade is refused, naming what was in progress. 0: "
       "refused at once. Default 60000.",
       Millis("upgrade-wait-ms", &DaemonConfig::upgrade_wait, 600'000)},
      {"upgrade", nullptr,
       "Do not serve: ask the daemon of --state-dir (default as the daemon's) to upgrade in "
       "place to the binary on disk, keeping its PID and running execs; print the outcome; "
       "exit 0 when it took effect, 1 when it failed and the old daemon serves on.",
       nullptr},
      {"version", nullptr, "Print the version and exit.", nullptr},
      {"help", nullptr, "Print this help and exit.", nullptr},
  };
  return flags;
}

// A command belongs to --init, and --exit-with-cmd to a command.
Status CheckInitFlags(const DaemonConfig& c) {
  if (!c.init && !c.command.empty()) {
    return Status::InvalidRequest("unexpected argument \"" + c.command.front() +
                                  "\" (a command needs --init)");
  }
  size_t paths = c.reset_paths.empty() && !c.engine.workdir.empty() ? 1 : c.reset_paths.size();
  if (c.reset_baselines.size() > paths) {
    return Status::InvalidRequest("--reset-baseline given " +
                                  std::to_string(c.reset_baselines.size()) + " times for " +
                                  std::to_string(paths) + " reset paths")
        .With("flag", std::string("reset-baseline"));
  }
  if (c.exit_with_cmd && c.command.empty()) {
    return Status::InvalidRequest("--exit-with-cmd needs --init and a command")
        .With("flag", std::string("exit-with-cmd"));
  }
  if (!c.init_user.empty() && c.command.empty()) {
    return Status::InvalidRequest("--init-user needs --init and a command")
        .With("flag", std::string("init-user"));
  }
  return Status::Ok();
}

}  // namespace

Result<ParsedFlags> ParseFlags(int argc, const char* const* argv) {
  ParsedFlags out;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--" || !arg.starts_with("--")) {
      out.config.command.assign(argv + i + (arg == "--" ? 1 : 0), argv + argc);
      break;
    }
    arg.remove_prefix(2);
    std::string_view value;
    bool has_value = false;
    if (size_t eq = arg.find('='); eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    const Flag* flag = nullptr;
    for (const Flag& f : Flags()) {
      if (arg == f.name) flag = &f;
    }
    if (!flag) {
      return Status::InvalidRequest("unknown flag --" + std::string(arg))
          .With("flag", std::string(arg));
    }
    if (!flag->metavar) {
      if (has_value) return Status::InvalidRequest("--" + std::string(arg) + " takes no value");
      if (arg == "help") out.action = ParsedFlags::Action::kHelp;
      if (arg == "version") out.action = ParsedFlags::Action::kVersion;
      if (arg == "upgrade") out.action = ParsedFlags::Action::kUpgrade;
      if (flag->apply) AGENTD_RETURN_IF_ERROR(flag->apply(out.config, value));
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        return Status::InvalidRequest("--" + std::string(arg) + " needs a value")
            .With("flag", std::string(arg));
      }
      value = argv[++i];
    }
    AGENTD_RETURN_IF_ERROR(flag->apply(out.config, value));
  }
  AGENTD_RETURN_IF_ERROR(CheckInitFlags(out.config));
  return out;
}

std::string HelpText() {
  std::string text =
      "agentd: the in-guest exec and file daemon.\n\n"
      "usage: agentd [FLAGS]\n"
      "       agentd --init [FLAGS] [--] CMD [ARGS...]\n\n"
      "The wire protocol is docs/PROTOCOL.md; every flag is described in docs/OPERATIONS.md.\n\n";
  for (const Flag& f : Flags()) {
    std::string left = std::string("  --") + f.name;
    if (f.metavar) left += std::string(" ") + f.metavar;
    if (left.size() < 30)
      left.resize(30, ' ');
    else
      left += "\n" + std::string(30, ' ');
    text += left + f.help + "\n";
  }
  return text;
}

}  // namespace agentd
