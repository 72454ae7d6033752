// Recovery at start (docs/PROTOCOL.md, "Exec"): every record found in the
// state directory comes back. One whose process was running (or whose
// output was still being collected) when the daemon died comes back
// running from its holder (exec/exec_held.cc), or from an upgrade's
// handover; without either it is marked "daemon_restart", with the reason.
// A context's interpreter comes back the same way, internal: its context
// takes it back (run/context_table.h), or it is discarded.
#include <signal.h>

#include <algorithm>

#include "agentd/protocol/time_format.h"
#include "exec/exec_engine.h"
#include "log/log.h"

namespace agentd {
namespace {

// In the anonymous namespace like the other exec files' aliases, so a
// unity batch holding several of them sees one alias, not a shadowing one.
using SystemClock = std::chrono::system_clock;

}  // namespace

std::vector<StoredExec> ExecEngine::LoadAndTakeOverEgress() {
  std::vector<StoredExec> stored = store_->LoadAll();
  for (const StoredExec& s : stored) {
    const json::Value* st = s.egress_state ? &*s.egress_state : nullptr;
    const json::Value* cgroup = st ? st->Find("cgroup") : nullptr;
    if (!cgroup || !cgroup->is_string() || st->Find("final")) continue;
    const json::Value* own = st->Find("own_dir");
    taken_egress_.emplace(s.info.id, EgressGuard::Adopt(cgroup->as_string(),
                                                        own && own->is_bool() && own->as_bool()));
  }
  return stored;
}

void ExecEngine::RecoverAll(std::vector<StoredExec> stored) {
  auto now = SystemClock::now();
  std::sort(stored.begin(), stored.end(), [](const StoredExec& a, const StoredExec& b) {
    return a.info.started_at < b.info.started_at;
  });
  for (StoredExec& s : stored) Recover(std::move(s), now);
  taken_egress_.clear();  // of records dropped on the way: their directories go
}

void ExecEngine::Recover(StoredExec stored, SystemClock::time_point now) {
  const ExecInfo& info = stored.info;
  if (tombstones_.Contains(info.id, now)) {  // released, but the removal was cut short
    ExecStore::RemoveDir(stored.dir);
    return;
  }
  auto rec = std::make_shared<ExecRecord>(io_.get_executor());
  rec->id = info.id;
  rec->fingerprint = std::move(stored.fingerprint);
  rec->seq = next_seq_++;
  rec->dir = stored.dir;
  rec->internal = stored.internal;  // a context's interpreter, its context's to take back
  rec->pid = static_cast<pid_t>(info.pid);
  rec->phase = ExecRecord::Phase::kExited;
  rec->exit_code = info.exit_code;
  rec->signal = info.signal;
  rec->timed_out = info.timed_out;
  rec->killed_by = info.killed_by;
  rec->limit = info.limit;
  rec->limits = info.limits;
  rec->profile = info.profile;
  rec->network = info.network;
  rec->restriction = info.restriction;
  rec->egress = info.egress;
  // The record does not say who it ran as: an unrestricted one (or one that
  // never got spawned restricted) counts as privileged, the safe side.
  if (!info.restriction && !info.error) privileged_generation_ = true;
  rec->timeout_sec = info.limit_timeout_sec;
  rec->error = info.error;
  rec->started_at = ParseRfc3339(info.started_at).value_or(now);
  rec->duration_ms = info.duration_ms;
  if (info.ended_at) rec->ended_at = ParseRfc3339(*info.ended_at);
  rec->stdin_closed = true;
  // Streamed, and closed unless a handover or a holder gives it back open.
  rec->stdin_stream = stored.stdin_streamed_next.has_value();
  rec->stdin_next = stored.stdin_streamed_next.value_or(0);
  const json::Object* handed = HandedOver(info.id);
  std::unique_ptr<Held> held;
  std::string no_holder;
  if (!handed && info.running && info.pid > 0) {
    held = ConnectHolder(static_cast<pid_t>(info.pid), no_holder);
  }
  if (info.egress) RecoverEgress(*rec, stored.egress_state, handed || held, now);
  if (handed || held) {
    // An upgrade handed this exec over, or its holder kept it: it runs on
    // (Adopt() or AdoptHeld() below).
  } else if (info.running && !info.exit_code) {
    // The daemon died while the process ran and nothing kept it for us:
    // its status is lost for good.
    rec->killed_by = "daemon_restart";
    rec->error = "the daemon restarted while the process ran and " + no_holder +
                 "; its exit status is unknown";
    rec->ended_at = now;
    rec->duration_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - rec->started_at).count();
  } else if (info.running && !rec->error) {
    rec->error = "the daemon restarted while the output was still being collected";
  }
  uint64_t recorded[2] = {info.stdout_retained_from, info.stderr_retained_from};
  for (Stream s : {Stream::kStdout, Stream::kStderr}) {
    int i = static_cast<int>(s);
    std::string path = rec->dir + "/" + std::string(StreamName(s));
    Result<std::unique_ptr<OutputLog>> log = OutputLog::Open(path, recorded[i]);
    if (!log.ok()) log = OutputLog::Create(path);
    if (!log.ok()) {
      Log(LogLevel::kWarn, "dropping an exec record whose output cannot be opened",
          json::Object().Set("id", rec->id).Set("error", log.status().message()));
      ExecStore::RemoveDir(stored.dir);
      return;
    }
    rec->logs[i] = std::move(*log);
    rec->log(s).set_budget(&budget_);
  }
  table_.emplace(rec->id, rec);
  if (handed) return Adopt(rec, *handed);
  if (held) {
    // Its group (limits) stays in the dead daemon's "agentd-<pid>" parent.
    if (stored.cgroup_state && stored.cgroup_state->is_object()) {
      AdoptGroup(*rec, stored.cgroup_state->as_object());
    }
    rec->held_internal = rec->internal;
    return AdoptHeld(rec, *held);
  }
  if (stored.acked_at_ms) {
    rec->acked = true;
    rec->acked_at = SystemClock::time_point(std::chrono::milliseconds(*stored.acked_at_ms));
    auto left = *rec->acked_at + std::chrono::seconds(options_.ack_ttl_sec) - now;
    ScheduleRelease(rec, std::max(std::chrono::milliseconds(0),
                                  std::chrono::duration_cast<std::chrono::milliseconds>(left)));
  }
  if (info.running) Persist(*rec);
}

void ExecEngine::RecoverEgress(ExecRecord& rec, const std::optional<json::Value>& state,
                               bool runs_on, SystemClock::time_point now) {
  const json::Value* final = state ? state->Find("final") : nullptr;
  if (final) {
    Result<EgressReport> r = DecodeEgressReport(*final);
    if (r.ok()) {
      rec.egress_final = std::move(*r);
      return;
    }
  }
  // It ran when the predecessor died: its programs, and the maps they
  // count in, are still attached to its cgroup; take them over.
  std::string why = "the record does not say where its programs were";
  if (auto it = taken_egress_.find(rec.id); it != taken_egress_.end()) {
    Result<std::unique_ptr<EgressGuard>> g = std::move(it->second);
    taken_egress_.erase(it);
    if (g.ok() && runs_on) {
      rec.egress_guard = std::move(*g);  // counted on; final at its end, as any
      return;
    }
    if (g.ok()) {
      // Nothing kept the exec for this daemon: what was counted so far is
      // final, and what its processes still do is not counted.
      EgressReport r;
      (*g)->Read(r);
      r.incomplete = EgressIncomplete{
          FormatRfc3339(now),
          "the daemon restarted and no holder kept the exec: attempts its processes make from "
          "then on are not counted"};
      CountEgress(r);
      rec.egress_final = std::move(r);
      return;
    }
    why = g.status().message();
  }
  EgressReport lost;
  lost.max_destinations = kMaxEgressDestinations;
  lost.incomplete = EgressIncomplete{
      FormatRfc3339(rec.started_at),
      "the daemon restarted and its successor cannot reach the exec's counts: " + why};
  rec.egress_final = std::move(lost);
}

void ExecEngine::DiscardUnclaimedInternal(const std::vector<std::string>& claimed) {
  std::vector<SharedRecord> unclaimed;
  for (const auto& [id, rec] : table_) {
    if (rec->internal && std::find(claimed.begin(), claimed.end(), id) == claimed.end()) {
      unclaimed.push_back(rec);
    }
  }
  for (const SharedRecord& rec : unclaimed) {
    Log(LogLevel::kInfo, "ending a context's interpreter no context took back",
        json::Object().Set("id", rec->id).Set("running", rec->running()));
    if (rec->running()) SignalGroup(*rec, SIGKILL);
    asio::co_spawn(io_, DiscardOnceFinished(rec), asio::detached);
  }
}

asio::awaitable<void> ExecEngine::DiscardOnceFinished(SharedRecord rec) {
  while (!rec->finished()) co_await rec->changed.Wait(ChangeSignal::Clock::time_point::max());
  Discard(ExecView(rec));
}

}  // namespace agentd
