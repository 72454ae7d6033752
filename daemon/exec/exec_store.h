// ExecStore: exec records on disk under <state-dir>/execs
// (docs/PROTOCOL.md, "Exec"; the layout is private to the daemon).
//
//   execs/exec-<id>/meta.json      the exec object, the request fingerprint,
//                                  the ack time and the egress state,
//                                  rewritten on each change
//   execs/exec-<id>/stdout, stderr the output logs (spool/output_log.h)
//
// The "exec-" prefix keeps ids such as ".." from naming anything but a
// child directory. Files are replaced atomically (temporary file, rename),
// so a daemon killed mid-write leaves the old or the new version; when the
// data is fsynced is exec/state_sync.h's (--state-sync; across daemon
// crashes nothing is lost without it). Methods that touch the disk
// synchronously are small metadata operations on the io thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/protocol/exec.h"
#include "agentd/protocol/status.h"
#include "agentd/trees/unique_fd.h"

namespace agentd {

// The state directory when --state-dir names none and it can be made.
inline constexpr char kDefaultStateDir[] = "/run/agentd";

struct StoredExec {
  std::string dir;
  std::string fingerprint;
  ExecInfo info;
  std::optional<int64_t> acked_at_ms;  // unix ms
  // The engine's own note on the exec's egress accounting (where its
  // programs hang, or its final counts), kept opaque here.
  std::optional<json::Value> egress_state;
  // Its cgroup while it runs (exec/group_state.h), likewise opaque.
  std::optional<json::Value> cgroup_state;
  // Streamed stdin ("stdin_stream"), and how many bytes the process was
  // given: a write after a restart or an upgrade answers as before it
  // (`stdin_closed` with `next`, not `stdin_not_streamed`). Absent in
  // records from before it was kept: not streamed.
  std::optional<uint64_t> stdin_streamed_next;
  // A context's interpreter (ExecRecord::held_internal), not a caller's exec.
  bool internal = false;
};

class ExecStore {
 public:
  // `root` is <state-dir>/execs; Open() creates it.
  explicit ExecStore(std::string root) : root_(std::move(root)) {}
  Status Open();
  const std::string& root() const { return root_; }

  std::string DirFor(std::string_view id) const;
  // Creates the record's directory (replacing leftovers of a released record).
  Status CreateDir(const std::string& dir);
  // Replaces meta.json; returns the file for a later fsync.
  Result<UniqueFd> WriteMeta(const std::string& dir, const ExecInfo& info,
                             std::string_view fingerprint, std::optional<int64_t> acked_at_ms,
                             json::Value egress_state = {}, json::Value cgroup_state = {},
                             std::optional<uint64_t> stdin_streamed_next = std::nullopt,
                             bool internal = false);

  // Every readable record; unreadable directories are removed (logged).
  std::vector<StoredExec> LoadAll();

  // Removes a record's directory and files. Blocking; for the pool.
  static void RemoveDir(const std::string& dir);

 private:
  std::string root_;
};

// Creates the state directory: `wanted` when given; else /run/agentd, then
// $XDG_RUNTIME_DIR/agentd, then a new temporary directory. Mode 0700.
Result<std::string> PrepareStateDir(const std::string& wanted);

}  // namespace agentd
