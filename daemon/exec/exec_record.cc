#include "exec/exec_record.h"

#include "agentd/protocol/time_format.h"

namespace agentd {

std::string_view StreamName(Stream s) { return s == Stream::kStdout ? "stdout" : "stderr"; }

ExecInfo ExecRecord::Info() const {
  ExecInfo e;
  e.id = id;
  e.running = phase != Phase::kExited;
  e.pid = pid;
  e.exit_code = exit_code;
  e.signal = signal;
  e.timed_out = timed_out;
  e.killed_by = killed_by;
  e.started_at = FormatRfc3339(started_at);
  if (ended_at) e.ended_at = FormatRfc3339(*ended_at);
  if (phase == Phase::kRunning) {
    e.duration_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - started_steady)
            .count();
  } else {
    e.duration_ms = duration_ms;
  }
  e.stdout_bytes = logs[0] ? logs[0]->next() : 0;
  e.stderr_bytes = logs[1] ? logs[1]->next() : 0;
  e.stdout_retained_from = logs[0] ? logs[0]->retained_from() : 0;
  e.stderr_retained_from = logs[1] ? logs[1]->retained_from() : 0;
  e.acked = acked;
  e.error = error;
  e.limit = limit;
  e.limit_timeout_sec = timeout_sec;
  e.limits = limits;
  e.profile = profile;
  e.restriction = restriction;
  e.network = network;
  e.egress = egress;
  return e;
}

}  // namespace agentd
