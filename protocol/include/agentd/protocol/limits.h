// Resource limits of an exec or a code run (docs/PROTOCOL.md, "Limits"):
// the request members, the effective values the daemon applies, and the
// limit that ended a process (the exec object's `killed_by` and `limit`).
// No I/O; plain data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "agentd/protocol/json.h"
#include "agentd/protocol/object_reader.h"

namespace agentd {

// Bounds of the limit members.
inline constexpr int64_t kMaxMemoryMb = int64_t{1} << 30;  // 1 EiB: no real bound
inline constexpr int64_t kMaxPids = 4'194'304;             // the kernel's pid_max ceiling
inline constexpr int64_t kMaxCpuSec = 30 * 86400;
inline constexpr int64_t kMaxFileSizeMb = int64_t{1} << 30;
inline constexpr int64_t kMinOutputBytes = 4096;
inline constexpr int64_t kMaxOutputBytes = int64_t{1} << 62;
inline constexpr int64_t kMinDiskBytes = 65536;
inline constexpr int64_t kMaxDiskBytes = int64_t{1} << 50;
inline constexpr size_t kMaxDiskPathBytes = 1024;
// Where the scratch tmpfs of `disk_bytes` is mounted when no disk_path is given.
inline constexpr char kDefaultDiskPath[] = "/tmp";
inline constexpr double kMinCpus = 0.01;
inline constexpr double kMaxCpus = 4096;

// Every member optional: absent means "the daemon's default" (a flag),
// whose own default is "no limit".
struct ExecLimits {
  std::optional<int64_t> memory_mb;     // RAM (+ swap) of the whole exec, MiB
  std::optional<int64_t> pids;          // processes and threads alive at once
  std::optional<int64_t> cpu_sec;       // CPU time consumed, seconds
  std::optional<int64_t> file_size_mb;  // largest file a process may write, MiB
  std::optional<int64_t> output_bytes;  // output retained per stream
  std::optional<bool> kill_on_output;   // exceeding output_bytes kills (default: a gap)
  std::optional<double> cpus;           // CPU bandwidth in cores (throttles, never kills)
  // A fresh tmpfs of disk_bytes mounted at disk_path (absolute; default
  // kDefaultDiskPath) in the exec's own mount namespace: its scratch space,
  // gone with the exec; filling it ends the exec (killed_by "disk").
  std::optional<int64_t> disk_bytes;
  std::optional<std::string> disk_path;

  bool empty() const {
    return !memory_mb && !pids && !cpu_sec && !file_size_mb && !output_bytes && !kill_on_output &&
           !cpus && !disk_bytes && !disk_path;
  }
  // Members of `this` win; the rest come from `defaults`.
  ExecLimits Over(const ExecLimits& defaults) const;
};

// Reads the limit members of a request object (they sit beside
// `timeout_sec`); problems are recorded on the reader.
ExecLimits ReadExecLimits(ObjectReader& r);
// Adds the set members to `o` under their request names.
void WriteExecLimits(json::Object& o, const ExecLimits& limits);
// The inverse of WriteExecLimits for answers (lenient: ignores bad members).
ExecLimits ParseExecLimits(const json::Value& doc);

// The limit that ended a process: `name` is the exec object's killed_by
// ("timeout", "memory", "pids", "cpu", "file_size", "output", "disk"); value and
// unit say what the limit was ({"name": "memory", "value": 256, "unit":
// "MiB"}).
struct LimitHit {
  std::string name;
  int64_t value = 0;
  std::string unit;
  bool operator==(const LimitHit&) const = default;
};

LimitHit TimeoutHit(int64_t timeout_sec);
LimitHit MemoryHit(int64_t memory_mb);
LimitHit PidsHit(int64_t pids);
LimitHit CpuHit(int64_t cpu_sec);
LimitHit FileSizeHit(int64_t file_size_mb);
LimitHit OutputHit(int64_t output_bytes);
LimitHit DiskHit(int64_t disk_bytes);

json::Value EncodeLimitHit(const LimitHit& hit);
std::optional<LimitHit> DecodeLimitHit(const json::Value* doc);
// "wall-clock limit 30s", "memory limit 256 MiB", "process limit 64",
// "CPU time limit 10s", "file size limit 1 MiB", "output limit 65536 bytes",
// "disk limit 1048576 bytes".
std::string DescribeLimit(const LimitHit& hit);

}  // namespace agentd
