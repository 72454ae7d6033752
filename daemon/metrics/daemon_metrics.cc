#include "metrics/daemon_metrics.h"

namespace agentd::metrics {
namespace {

DaemonMetrics* Build() {
  auto* r = new Registry();
  Family<Counter>& tar = r->AddCounter(
      "agentd_tar_bytes_total", "Tar archive bytes received (in) and sent (out).", {"direction"});
  Family<Counter>& file =
      r->AddCounter("agentd_file_bytes_total",
                    "File bytes written (in) and read (out) by the file routes.", {"direction"});
  return new DaemonMetrics{
      *r,
      r->AddCounter("agentd_execs_started_total", "Execs started (kind exec or run).", {"kind"}),
      r->AddCounter("agentd_execs_exited_total", "Execs whose leader exited, by outcome.",
                    {"outcome"}),
      r->AddCounter("agentd_exec_forced_terminations_total",
                    "Execs the daemon ended, by the limit or request that ended them.", {"limit"}),
      r->AddHistogram("agentd_exec_duration_seconds", "Time from spawn to the leader's exit.", {},
                      LatencyBuckets())
          .With({}),
      r->AddHistogram("agentd_exec_spawn_seconds",
                      "Time to start a process: cgroup set-up and spawn.", {}, LatencyBuckets())
          .With({}),
      r->AddCounter("agentd_exec_output_bytes_total", "Output bytes collected from execs.",
                    {"stream"}),
      r->AddCounter("agentd_http_requests_total", "HTTP requests answered.",
                    {"method", "route", "status"}),
      r->AddHistogram("agentd_http_request_duration_seconds",
                      "Time from a request's head to the end of its answer.", {"route"},
                      LatencyBuckets()),
      r->AddHistogram("agentd_run_phase_seconds",
                      "Phases of /v1/run: changed-files scans and execution.", {"phase"},
                      LatencyBuckets()),
      tar.With({"in"}),
      tar.With({"out"}),
      file.With({"in"}),
      file.With({"out"}),
      r->AddCounter("agentd_resets_total", "Guest resets, by result.", {"result"}),
      r->AddHistogram("agentd_reset_duration_seconds", "A guest reset from start to report.", {},
                      LatencyBuckets())
          .With({}),
      r->AddCounter("agentd_reset_remaining_total",
                    "Items a guest reset found left over (each quarantines), by kind.", {"kind"}),
      r->AddCounter("agentd_egress_attempts_total",
                    "Connects and datagrams of ended execs with an egress policy, by verdict "
                    "(overflow: past the per-exec accounting bound).",
                    {"verdict"}),
      r->AddCounter("agentd_state_writes_total", "Exec records written to the state directory.", {})
          .With({}),
      r->AddCounter("agentd_state_syncs_total",
                    "fsync rounds for written exec records (--state-sync).", {})
          .With({}),
  };
}

}  // namespace

DaemonMetrics& Daemon() {
  static DaemonMetrics* m = Build();
  return *m;
}

std::string_view ExitOutcomeLabel(bool spawn_failed, bool killed, bool signaled, int exit_code) {
  if (spawn_failed) return "spawn_failed";
  if (killed) return "killed";
  if (signaled) return "signaled";
  return exit_code == 0 ? "success" : "failure";
}

}  // namespace agentd::metrics
