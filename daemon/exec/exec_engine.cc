// The exec table: start, lookup, ack, kill, release, persistence, recovery.
// Opening the engine (once per start) is in exec_open.cc.
// The life of a running process is in exec_process.cc.
#include "exec/exec_engine.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "exec/group_state.h"
#include "limits/egress_names.h"
#include "log/log.h"
#include "metrics/daemon_metrics.h"
#include "proc/child_env.h"
#include "proc/empty_network.h"
#include "proc/process_group.h"
#include "proc/readonly_mounts.h"
#include "proc/runtimes.h"
#include "proc/scratch_mount.h"
#include "proc/signals.h"
#include "sys/awaitable.h"
#include "sys/pty.h"
#include "sys/read_file.h"

extern char** environ;

namespace agentd {
namespace {

using SystemClock = std::chrono::system_clock;

int64_t UnixMs(SystemClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

}  // namespace

ExecEngine::ExecEngine(asio::io_context& io, asio::thread_pool& blocking,
                       const ExecEngineOptions& options, const BootstrapState& bootstrap)
    : io_(io),
      blocking_(blocking),
      options_(options),
      bootstrap_(bootstrap),
      budget_(options_.retention_stream_bytes, options_.retention_total_bytes),
      reaper_(io),
      limit_timer_(io),
      sweep_timer_(io) {}

ExecEngine::~ExecEngine() {
  // Records may outlive the engine inside coroutine frames destroyed later;
  // detach their logs from the budget first.
  for (auto& [id, rec] : table_) {
    for (auto& log : rec->logs) {
      if (log) log->set_budget(nullptr);
    }
  }
}

void ExecEngine::Shutdown() {
  stopping_ = true;
  if (self_tests_) self_tests_->Stop();
  limit_timer_.cancel();
  sweep_timer_.cancel();
  // The reaper and the output pumps keep running while connections drain,
  // so the killed execs still end normally (exit events, final metadata).
  for (auto& [id, rec] : table_) {
    rec->timeout_timer.cancel();
    rec->release_timer.cancel();
    if (rec->finished()) continue;
    if (rec->running() && !rec->killed_by) rec->killed_by = "daemon_shutdown";
    SignalGroup(*rec, SIGKILL);
    Log(LogLevel::kInfo, "killed on shutdown", json::Object().Set("id", id).Set("pid", rec->pid));
  }
}

void ExecEngine::WhenFinished(std::chrono::milliseconds limit, std::function<void()> done) {
  asio::co_spawn(io_, WaitFinished(limit, std::move(done)), asio::detached);
}

asio::awaitable<void> ExecEngine::WaitFinished(std::chrono::milliseconds limit,
                                               std::function<void()> done) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  asio::steady_timer poll(io_);
  auto all_finished = [this] {
    return std::all_of(table_.begin(), table_.end(),
                       [](const auto& kv) { return kv.second->finished(); });
  };
  while (!all_finished() && std::chrono::steady_clock::now() < deadline) {
    poll.expires_after(std::chrono::milliseconds(20));
    co_await poll.async_wait(kUseNothrow);
  }
  done();
}

Result<std::optional<Credentials>> ExecEngine::ResolveRestrictedIdentity(
    const ExecStartRequest& request) {
  if (!refusal_filter_ && !options_.restricted_without_seccomp) {
    return Status::Error(ErrorCode::kProfileUnsupported,
                         "this guest cannot run restricted execs: " + restricted_unavailable_ +
                             " (the operator's --restricted-without-seccomp runs them "
                             "without the filter)")
        .With("profile", std::string(kProfileRestricted));
  }
  UserDb db = LoadUserDb();
  Result<std::optional<Credentials>> creds = Status::Ok();
  if (request.user) {
    creds = ResolveCredentials(request.user, request.group, db);
  } else {
    creds = ResolveCredentials(options_.restricted_user, request.group, db);
    if (!creds.ok() && creds.status().code() == ErrorCode::kUnknownUser) {
      // Creating users is the image's job: say which one the operator named.
      return Status::Error(ErrorCode::kRestrictedUserUnknown,
                           "the restricted user \"" + options_.restricted_user +
                               "\" (--restricted-user) does not exist in this guest's "
                               "/etc/passwd")
          .With("user", options_.restricted_user);
    }
  }
  if (!creds.ok()) return creds.status();
  if (*creds && (*creds)->uid && *(*creds)->uid == 0) {
    // Root owns /etc, the daemon's binary and its state without any
    // capability: a restricted exec must run as someone else.
    return Status::InvalidRequest("a restricted exec does not run as root (uid 0)")
        .With("field", std::string("user"));
  }
  return creds;
}

Result<std::optional<Credentials>> ExecEngine::ResolveIdentity(const ExecStartRequest& request) {
  if (!request.user && !request.group) return std::optional<Credentials>();
  // Read on every start that names a user: an image may add users at any time.
  return ResolveCredentials(request.user, request.group, LoadUserDb());
}

namespace {

bool Disabled(const ExecEngineOptions& options, Runtime r) {
  const std::vector<Runtime>& off = options.disabled_runtimes;
  return std::find(off.begin(), off.end(), r) != off.end();
}

RuntimeCheck DisabledCheck(Runtime r) {
  RuntimeCheck c;
  c.runtime = r;
  c.code = "disabled_by_flag";
  c.reason = "runtime \"" + std::string(RuntimeName(r)) +
             "\" is disabled by the daemon's --disable-runtime flag";
  return c;
}

// The same code and reason as health's runtimes_unavailable entry.
Status CheckRuntime(const ExecEngineOptions& options, RuntimeSelfTests* self_tests, Runtime runtime,
                    const std::vector<std::string>& env) {
  RuntimeCheck check =
      Disabled(options, runtime) ? DisabledCheck(runtime) : CheckRuntimeForEnv(runtime, env);
  if (self_tests) self_tests->Apply(check);
  if (check.ok()) return Status::Ok();
  std::string name(RuntimeName(runtime));
  return Status::Error(ErrorCode::kRuntimeUnavailable,
                       "runtime \"" + name + "\" is not available in this guest: " + check.reason)
      .With("runtime", name)
      .With("program", std::string(RuntimeProgram(runtime)))
      .With("reason_code", check.code)
      .With("reason", check.reason);
}

}  // namespace

Result<ExecEngine::Prepared> ExecEngine::Prepare(ExecStartRequest request) {
  bool restricted = request.profile.value_or(options_.default_profile) == kProfileRestricted;
  if (request.network && !network_unavailable_.empty()) {
    return Status::Error(
               ErrorCode::kLimitUnsupported,
               "\"network\": \"none\" is not available in this guest: " + network_unavailable_)
        .With("field", std::string("network"));
  }
  std::optional<EgressPolicy> egress = request.egress;
  if (!egress && !options_.default_egress.empty()) {
    egress.emplace();
    egress->mode = options_.default_egress;
  }
  std::vector<EgressRule> egress_table;
  if (egress) {
    if (!egress_host_.available()) {
      return Status::Error(ErrorCode::kLimitUnsupported,
                           "\"egress\" is not available in this guest: " + egress_host_.why())
          .With("field", std::string("egress"));
    }
    std::vector<std::string> nameservers;
    if (egress->dns) {
      Result<std::string> resolv = ReadFileToString("/etc/resolv.conf", 1 << 16);
      if (resolv.ok()) nameservers = ParseNameservers(*resolv);
    }
    Result<std::vector<EgressRule>> table = BuildEgressTable(*egress, nameservers);
    if (!table.ok()) return table.status();
    egress_table = std::move(*table);
  }
  Result<std::optional<Credentials>> identity =
      restricted ? ResolveRestrictedIdentity(request) : ResolveIdentity(request);
  if (!identity.ok()) return identity.status();
  Prepared p;
  p.restricted = restricted;
  p.egress = std::move(egress);
  p.egress_table = std::move(egress_table);
  const Credentials* creds = *identity ? &**identity : nullptr;
  p.env = BuildChildEnv(environ, bootstrap_.launch_env(), creds, request.env);
  if (request.runtime) {
    AGENTD_RETURN_IF_ERROR(CheckRuntime(options_, self_tests_.get(), *request.runtime, p.env));
    if (!request.cwd) request.cwd = DefaultRunCwd(options_.workdir);
  }
  p.request = std::move(request);
  p.identity = std::move(*identity);
  return p;
}

std::vector<RuntimeCheck> ExecEngine::RuntimeChecks() const {
  std::vector<RuntimeCheck> out = runtime_probe_.Check(ChildPath(environ, bootstrap_.launch_env()));
  for (RuntimeCheck& c : out) {
    if (Disabled(options_, c.runtime)) c = DisabledCheck(c.runtime);
    if (self_tests_) self_tests_->Apply(c);
  }
  return out;
}

std::vector<RuntimeSelfTests::Verdict> ExecEngine::RuntimeSelfTestVerdicts() const {
  if (!self_tests_) return {};
  return self_tests_->Verdicts();
}

ExecEngine::RuntimeEpoch ExecEngine::RuntimeEpochNow() const {
  return RuntimeEpoch{runtime_probe_.Refresh(ChildPath(environ, bootstrap_.launch_env())),
                      self_tests_ ? self_tests_->changes() : 0};
}

std::vector<std::string> ExecEngine::Runtimes() const {
  std::vector<std::string> out;
  for (const RuntimeCheck& c : RuntimeChecks()) {
    if (c.ok()) out.emplace_back(RuntimeName(c.runtime));
  }
  return out;
}

Result<ExecEngine::Started> ExecEngine::StartRun(Prepared prepared) {
  AGENTD_RETURN_IF_ERROR(CheckCapacity());
  std::string id;
  do {
    id = "run." + std::to_string(next_run_++) + "." + std::to_string(::getpid());
  } while (table_.count(id) != 0 || tombstones_.Contains(id, SystemClock::now()));
  std::string fingerprint = ExecFingerprint(prepared.request);
  return Insert(id, std::move(fingerprint), std::move(prepared), /*internal=*/true);
}

void ExecEngine::Expire(const ExecView& exec, int64_t timeout_sec) {
  const SharedRecord& rec = exec.record();
  if (!rec->running() || rec->killed_by) return;
  rec->timeout_sec = timeout_sec;
  OnTimeout(rec);
}

void ExecEngine::Discard(const ExecView& exec) {
  const SharedRecord& rec = exec.record();
  if (rec->released) return;
  rec->released = true;
  if (auto it = table_.find(rec->id); it != table_.end() && it->second == rec) table_.erase(it);
  for (auto& log : rec->logs) {
    if (log) log->set_budget(nullptr);
  }
  asio::post(blocking_, [dir = rec->dir]() { ExecStore::RemoveDir(dir); });
  rec->changed.Notify();
}

Result<ExecEngine::Started> ExecEngine::Start(const ExecId& exec_id, ExecStartRequest request) {
  const std::string& id = exec_id.str();
  std::string fingerprint = ExecFingerprint(request);
  if (auto it = table_.find(id); it != table_.end()) {
    if (it->second->fingerprint == fingerprint) return Started{ExecView(it->second), false};
    return Status::Error(ErrorCode::kExecIdConflict,
                         "exec \"" + id + "\" exists with a different start request")
        .With("id", id);
  }
  if (tombstones_.Contains(id, SystemClock::now())) {
    return Status::Error(ErrorCode::kExecReleased, "exec \"" + id + "\" was released")
        .With("id", id);
  }
  AGENTD_RETURN_IF_ERROR(CheckCapacity());
  Result<Prepared> prepared = Prepare(std::move(request));
  if (!prepared.ok()) return prepared.status();
  return Insert(id, std::move(fingerprint), std::move(*prepared), /*internal=*/false);
}

asio::awaitable<Status> ExecEngine::ResolveEgressNames(ExecStartRequest& request) {
  // Where no policy can be enforced, Prepare() refuses it (limit_unsupported)
  // without a lookup the answer would not use.
  if (!request.egress || !egress_host_.available()) co_return Status::Ok();
  Result<std::vector<std::string>> names = EgressNames(*request.egress);
  if (!names.ok()) co_return names.status();
  if (names->empty()) co_return Status::Ok();
  auto resolve = [names = std::move(*names)] { return agentd::ResolveEgressNames(names); };
  Result<std::vector<EgressResolvedName>> resolved =
      co_await RunBlocking(blocking_, std::move(resolve));
  if (!resolved.ok()) co_return resolved.status();
  request.egress->resolved = std::move(*resolved);
  co_return Status::Ok();
}

asio::awaitable<Result<ExecEngine::Started>> ExecEngine::StartLaunched(const ExecId& id,
                                                                       ExecStartRequest& request) {
  // A repeated start of the same id answers the record without resolving.
  if (!table_.contains(id.str())) {
    if (Status s = co_await ResolveEgressNames(request); !s.ok()) co_return s;
  }
  Result<Started> started = Start(id, std::move(request));
  if (started.ok()) {
    co_await Launched(started->exec);
  }
  co_return started;
}

asio::awaitable<void> ExecEngine::Launched(ExecView exec) {
  SharedRecord rec = exec.record();
  // LaunchInGroup notifies once the process is spawned or failed; nothing
  // awaits between the check and the wait, so that wake-up is not lost.
  while (rec->launching) co_await rec->changed.Wait(ChangeSignal::Clock::time_point::max());
}

Status ExecEngine::CheckCapacity() const {
  if (static_cast<int64_t>(table_.size()) < options_.max_execs) return Status::Ok();
  return Status::Error(ErrorCode::kTooManyExecs, "the daemon holds " +
                                                     std::to_string(table_.size()) +
                                                     " exec records; ack some to release them")
      .With("limit", options_.max_execs);
}

Result<ExecEngine::Started> ExecEngine::Insert(const std::string& id, std::string fingerprint,
                                               Prepared prepared, bool internal) {
  auto rec = std::make_shared<ExecRecord>(io_.get_executor());
  AGENTD_RETURN_IF_ERROR(ApplyLimits(prepared.request, prepared.identity, *rec));
  if (prepared.open_ended) rec->timeout_sec.reset();
  rec->internal = internal;
  rec->id = id;
  rec->fingerprint = std::move(fingerprint);
  rec->seq = next_seq_++;
  rec->dir = store_->DirFor(id);
  rec->kill_grace_sec = prepared.request.kill_grace_sec.value_or(kDefaultKillGraceSec);
  rec->profile = prepared.restricted ? kProfileRestricted : kProfileUnrestricted;
  rec->network = prepared.request.network;
  rec->egress = prepared.egress;
  rec->egress_table = prepared.egress_table;
  AGENTD_RETURN_IF_ERROR(store_->CreateDir(rec->dir));
  for (Stream s : {Stream::kStdout, Stream::kStderr}) {
    rec->logs[static_cast<int>(s)] = OutputLog::Create(rec->dir + "/" + std::string(StreamName(s)));
    rec->log(s).set_budget(&budget_);
    if (rec->limits.output_bytes) {
      rec->log(s).set_stream_cap(static_cast<uint64_t>(*rec->limits.output_bytes));
    }
  }
  table_.emplace(id, rec);
  metrics::Daemon().execs_started.With({internal ? "run" : "exec"}).Inc();
  Launch(rec, prepared);
  Persist(*rec);
  return Started{ExecView(rec), true};
}

Result<ExecEngine::SharedRecord> ExecEngine::FindRecord(std::string_view id) {
  AGENTD_RETURN_IF_ERROR(ValidateExecId(id));
  if (auto it = table_.find(std::string(id)); it != table_.end()) return it->second;
  if (tombstones_.Contains(id, SystemClock::now())) {
    return Status::Error(ErrorCode::kExecReleased,
                         "exec \"" + std::string(id) + "\" was acked and released")
        .With("id", std::string(id));
  }
  if (generation_ > 0) {
    // Ids of an earlier tenant were forgotten at the reset; say so.
    return Status::Error(ErrorCode::kExecNotFound,
                         "no exec \"" + std::string(id) + "\" in generation " +
                             std::to_string(generation_) +
                             " (the guest was reset; earlier records are gone)")
        .With("id", std::string(id))
        .With("generation", generation_);
  }
  return Status::Error(ErrorCode::kExecNotFound, "no exec \"" + std::string(id) + "\"")
      .With("id", std::string(id));
}

Result<ExecView> ExecEngine::Find(std::string_view id) {
  Result<SharedRecord> found = FindRecord(id);
  if (!found.ok()) return found.status();
  return ExecView(*found);
}

void ExecEngine::KillAll() {
  for (auto& [id, rec] : table_) {
    rec->timeout_timer.cancel();
    rec->grace_timer.cancel();
    if (rec->finished()) continue;
    if (rec->running() && !rec->killed_by) rec->killed_by = "reset";
    SignalGroup(*rec, SIGKILL);
  }
}

void ExecEngine::MarkResetKill() {
  for (auto& [id, rec] : table_) {
    rec->timeout_timer.cancel();
    rec->grace_timer.cancel();
    if (rec->running() && !rec->killed_by) rec->killed_by = "reset";
  }
}

bool ExecEngine::AllFinished() const {
  return std::all_of(table_.begin(), table_.end(),
                     [](const auto& kv) { return kv.second->finished(); });
}

std::vector<std::string> ExecEngine::DropAll() {
  std::vector<std::string> dirs;
  for (auto& [id, rec] : table_) {
    rec->release_timer.cancel();
    rec->drain_timer.cancel();
    rec->released = true;
    for (auto& log : rec->logs) {
      if (log) log->set_budget(nullptr);
    }
    ReleaseGroup(rec);
    dirs.push_back(rec->dir);
    rec->changed.Notify();
  }
  table_.clear();
  watched_.clear();
  tombstones_.Clear();
  ++generation_;
  privileged_generation_ = false;
  return dirs;
}

Result<EgressReport> ExecEngine::Egress(std::string_view id) {
  Result<SharedRecord> found = FindRecord(id);
  if (!found.ok()) return found.status();
  const SharedRecord& rec = *found;
  EgressReport r;
  if (rec->egress_guard) {
    rec->egress_guard->Read(r);
    if (rec->egress_taken) MergeEgressReport(r, *rec->egress_taken, kMaxEgressDestinations);
  } else if (rec->egress_final) {
    r = *rec->egress_final;
  } else if (rec->egress) {
    r.accounting = true;  // its spawn failed before anything ran: nothing was sent
    r.max_destinations = kMaxEgressDestinations;
  }
  r.id = rec->id;
  r.policy = rec->egress;
  return r;
}

std::optional<EgressReport> ExecEngine::TakeEgress(std::string_view id) {
  Result<SharedRecord> found = FindRecord(id);
  if (!found.ok()) return std::nullopt;
  ExecRecord& rec = **found;
  EgressReport r;
  if (rec.egress_guard) {
    rec.egress_guard->Take(r);
    if (!rec.egress_taken) {
      rec.egress_taken.emplace();
      rec.egress_taken->accounting = true;
      rec.egress_taken->max_destinations = kMaxEgressDestinations;
    }
    MergeEgressReport(*rec.egress_taken, r, kMaxEgressDestinations);
  } else if (rec.egress_untaken) {
    r = std::move(*rec.egress_untaken);
    rec.egress_untaken.reset();
  } else {
    return std::nullopt;
  }
  r.id = rec.id;
  r.policy = rec.egress;
  return r;
}

Result<ExecInfo> ExecEngine::Ack(std::string_view id) {
  Result<SharedRecord> found = FindRecord(id);
  if (!found.ok()) return found.status();
  SharedRecord rec = *found;
  if (!rec->finished()) {
    return Status::Error(ErrorCode::kExecRunning,
                         "exec \"" + rec->id + "\" is still running; ack it after it exited")
        .With("id", rec->id);
  }
  if (!rec->acked) {
    rec->acked = true;
    rec->acked_at = SystemClock::now();
    // An ack ends the exec: background processes it left behind go too
    // (docs/PROTOCOL.md, "Ack").
    if (rec->owns_group && KillLeftoverGroup(rec->pid)) {
      Log(LogLevel::kInfo, "killed what the exec left running", json::Object().Set("id", rec->id));
    }
    rec->owns_group = false;
    Persist(*rec);
    ScheduleRelease(rec, std::chrono::seconds(options_.ack_ttl_sec));
    rec->changed.Notify();
  }
  return rec->Info();
}

Result<ExecInfo> ExecEngine::Resize(std::string_view id, const ResizeRequest& request) {
  Result<SharedRecord> found = FindRecord(id);
  if (!found.ok()) return found.status();
  const ExecRecord& rec = **found;
  if (!rec.pty) {
    return Status::Error(ErrorCode::kNotAPty, "exec \"" + rec.id + "\" does not run on a PTY")
        .With("id", rec.id);
  }
  const auto& out = rec.pipes[static_cast<int>(Stream::kStdout)];
  int master = rec.pty_master ? rec.pty_master.get() : -1;
  if (!rec.holder && out && out->is_open()) master = out->native_handle();
  if (master >= 0) {
    AGENTD_RETURN_IF_ERROR(
        ResizePty(master, static_cast<int>(request.rows), static_cast<int>(request.cols)));
  }
  return rec.Info();
}

asio::awaitable<Result<std::unique_ptr<StdinWrite>>> ExecEngine::BeginStdin(
    std::string_view id, uint64_t offset, std::chrono::milliseconds io_timeout) {
  Result<SharedRecord> found = FindRecord(id);
  if (!found.ok()) co_return found.status();
  Result<std::unique_ptr<StdinWrite>> write =
      co_await StdinWrite::Begin(*found, offset, io_timeout);
  co_return write;
}

Result<ExecInfo> ExecEngine::Kill(std::string_view id, const KillRequest& request) {
  int signo = SIGTERM;
  if (request.signal) {
    std::optional<int> parsed = SignalFromName(*request.signal);
    if (!parsed) {
      return Status::InvalidRequest("unknown signal \"" + *request.signal + "\"")
          .With("field", "signal")
          .With("signal", *request.signal);
    }
    signo = *parsed;
  }
  Result<SharedRecord> found = FindRecord(id);
  if (!found.ok()) return found.status();
  SharedRecord rec = *found;
  if (rec->finished()) return rec->Info();  // nothing left to signal
  if (rec->running() && !rec->killed_by) rec->killed_by = "kill";
  SignalGroup(*rec, signo);
  if (signo != SIGKILL) {
    ArmGrace(rec, std::chrono::seconds(request.grace_sec.value_or(kDefaultKillGraceSec)));
  }
  Log(LogLevel::kInfo, "exec killed",
      json::Object().Set("id", rec->id).Set("signal", SignalName(signo)));
  return rec->Info();
}

std::vector<ExecInfo> ExecEngine::List() const {
  std::vector<const ExecRecord*> recs;
  recs.reserve(table_.size());
  for (const auto& [id, rec] : table_) recs.push_back(rec.get());
  std::sort(recs.begin(), recs.end(),
            [](const ExecRecord* a, const ExecRecord* b) { return a->seq < b->seq; });
  std::vector<ExecInfo> out;
  out.reserve(recs.size());
  for (const ExecRecord* r : recs) out.push_back(r->Info());
  return out;
}

ExecTotals ExecEngine::Totals() const {
  return ExecTotals{running_ > 0, static_cast<int64_t>(table_.size())};
}

void ExecEngine::Persist(const ExecRecord& rec, bool handing_over) {
  if (rec.released || (rec.internal && !rec.held_internal && !handing_over)) return;
  std::optional<int64_t> acked_at;
  if (rec.acked_at) acked_at = UnixMs(*rec.acked_at);
  // Where the exec's programs hang while it runs, its counts once it ended:
  // what a successor needs to answer them after a crash (exec_recovery.cc).
  json::Value egress_state;
  if (rec.egress_final) {
    egress_state = json::Object().Set("final", EncodeEgressReport(*rec.egress_final));
  } else if (rec.egress_guard) {
    egress_state = json::Object()
                       .Set("cgroup", rec.egress_guard->dir())
                       .Set("own_dir", rec.egress_guard->own_dir());
  }
  // Its cgroup while it runs: a successor after a crash reads it on.
  json::Value cgroup_state;
  if (rec.group && !rec.finished()) cgroup_state = EncodeGroupState(rec.group->paths(), rec.seq);
  std::optional<uint64_t> stdin_next;
  if (rec.stdin_stream) stdin_next = rec.stdin_next;
  Result<UniqueFd> written =
      store_->WriteMeta(rec.dir, rec.Info(), rec.fingerprint, acked_at, std::move(egress_state),
                        std::move(cgroup_state), stdin_next, rec.internal);
  if (!written.ok()) {
    Log(LogLevel::kWarn, "cannot persist an exec record",
        json::Object().Set("id", rec.id).Set("error", written.status().message()));
    return;
  }
  sync_->Written(std::move(*written), rec.dir);
}

void ExecEngine::ScheduleRelease(const SharedRecord& rec, std::chrono::milliseconds delay) {
  rec->release_timer.expires_after(delay);
  rec->release_timer.async_wait([this, rec](const asio::error_code& ec) {
    if (!ec) Release(rec);
  });
}

void ExecEngine::Release(const SharedRecord& rec) {
  if (rec->released) return;
  rec->released = true;
  table_.erase(rec->id);
  tombstones_.Add(rec->id, SystemClock::now());
  for (auto& log : rec->logs) {
    if (log) log->set_budget(nullptr);
  }
  asio::post(blocking_, [dir = rec->dir]() { ExecStore::RemoveDir(dir); });
  rec->changed.Notify();
  Log(LogLevel::kInfo, "exec released", json::Object().Set("id", rec->id));
}

}  // namespace agentd
