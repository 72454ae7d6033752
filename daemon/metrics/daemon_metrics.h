// The daemon's metrics (docs/PROTOCOL.md, "Metrics"), registered once in
// the process-wide registry. Components count through Daemon(); for
// example the file routes add to file_bytes_in / file_bytes_out and the
// tar routes to tar_bytes_in / tar_bytes_out. Counting is lock-free and
// allowed on any thread (metrics/metrics.h). Label values are closed sets:
// route patterns, methods, status codes, stream and limit names.
#pragma once

#include "metrics/metrics.h"

namespace agentd::metrics {

struct DaemonMetrics {
  Registry& registry;
  Family<Counter>& execs_started;        // {kind="exec"|"run"}
  Family<Counter>& execs_exited;         // {outcome}
  Family<Counter>& forced_terminations;  // {limit}
  Histogram& exec_duration;              // leader start to exit, seconds
  Histogram& spawn_latency;              // group setup + spawn, seconds
  Family<Counter>& output_bytes;         // {stream}
  Family<Counter>& http_requests;        // {method, route, status}
  Family<Histogram>& http_duration;      // {route}
  Family<Histogram>& run_phase;          // {phase="scan_before"|"execution"|"scan_after"}
  Counter& tar_bytes_in;
  Counter& tar_bytes_out;
  Counter& file_bytes_in;
  Counter& file_bytes_out;
  Family<Counter>& resets;           // {result="clean"|"quarantined"}
  Histogram& reset_duration;         // a reset's whole run, seconds
  Family<Counter>& reset_remaining;  // {kind="process"|"path"}: items found left over
  // {verdict="allowed"|"refused"|"overflow"}: egress attempts of ended
  // policed execs (no addresses in labels; GET /v1/execs/{id}/egress has them).
  Family<Counter>& egress_attempts;
  // Exec records written to the state directory, and fsync rounds for
  // them (--state-sync: one per write with always, one per group commit
  // with batch, none with none).
  Counter& state_writes;
  Counter& state_syncs;
};

// The one instance (created on first use, never destroyed).
DaemonMetrics& Daemon();

// The outcome label of an exited exec: "success", "failure", "signaled",
// "killed" (killed_by set) or "spawn_failed".
std::string_view ExitOutcomeLabel(bool spawn_failed, bool killed, bool signaled, int exit_code);

}  // namespace agentd::metrics
