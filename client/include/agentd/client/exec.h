// Exec types of the client library (docs/CLIENT.md, "Exec"). The wire
// types (ExecStartRequest, ExecInfo, ExecPollResponse, ...) come from
// agentd/protocol/exec.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "agentd/protocol/exec.h"

namespace agentd::client {

// A fresh exec id: `prefix` (default "x") plus time and 64 random bits, so
// ids from many hosts never collide and sort roughly by start time.
std::string MintExecId(std::string_view prefix = "x");

// Where a reader is in an exec's two output streams: the next byte offset
// of each. Persist these (with the exec id) to reattach after a restart.
struct StreamCursors {
  uint64_t stdout_next = 0;
  uint64_t stderr_next = 0;
};

struct PollOptions {
  std::optional<uint64_t> stdout_from;  // absent: no stdout bytes
  std::optional<uint64_t> stderr_from;
  std::optional<uint64_t> max_bytes;  // per stream
  std::chrono::milliseconds wait{0};  // long poll
  bool until_exit = false;            // new output alone does not end the wait
};

// WaitForOutput (docs/PROTOCOL.md, "Wait for output").
struct WaitForOutputOptions {
  std::string stream = "stdout";  // or "stderr"
  uint64_t cursor = 0;            // the stream offset a match may start at
  // Give up after this long (the answer's match then says "timeout");
  // absent: wait for as long as it takes.
  std::optional<std::chrono::milliseconds> timeout;
};

// Callbacks of Stream(). Each is optional. They run on the client's
// executor (the calling thread for the blocking Client).
struct StreamCallbacks {
  // Bytes of a stream at absolute `offset`; every byte exactly once, in order.
  std::function<void(uint64_t offset, std::string_view bytes)> on_stdout;
  std::function<void(uint64_t offset, std::string_view bytes)> on_stderr;
  // Bytes [from, to) of `stream` are no longer retained by the daemon.
  std::function<void(std::string_view stream, uint64_t from, uint64_t to)> on_gap;
  // After every delivered event: the cursors to persist for a reattach.
  std::function<void(const StreamCursors&)> on_cursors;
  // Each reconnect after a lost connection (attempt counts from 1).
  std::function<void(int attempt, const Status& why)> on_reconnect;
};

// ReadOutput's answer (GET /v1/execs/{id}/stdout|stderr without follow).
struct OutputChunk {
  uint64_t start = 0;  // the offset of data's first byte
  uint64_t next = 0;   // the stream's length when the daemon answered: the next start
  std::string data;
  // Set when `start` is past the offset asked for: bytes [gap->first,
  // gap->second) are no longer retained by the daemon.
  std::optional<std::pair<uint64_t, uint64_t>> gap;
};

// The most ReadOutput holds in memory unless told otherwise (the daemon
// retains more; read it in pieces from `next`).
inline constexpr size_t kReadOutputMaxBytes = 256u << 20;
// The metrics text is a few kilobytes; a daemon cannot make the client hold more.
inline constexpr size_t kMetricsMaxBytes = 4u << 20;

struct RunOptions {
  std::string id;  // empty: minted
  // Output kept in the result, per stream; the rest is counted, not kept.
  size_t max_stdout_bytes = 64u << 20;
  size_t max_stderr_bytes = 64u << 20;
  bool ack = true;  // ack the exec once its output was read
};

struct RunResult {
  std::string id;
  int64_t exit_code = -1;  // 128+n for a signal, 124 for a timeout
  std::optional<std::string> signal;
  bool timed_out = false;
  std::optional<std::string> killed_by;
  int64_t duration_ms = 0;
  std::string stdout_data;
  std::string stderr_data;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  ExecInfo exec;  // the final exec object
};

}  // namespace agentd::client
