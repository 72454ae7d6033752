#include "reuse/guest_reset.h"

#include <sys/random.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "agentd/trees/dir_entries.h"
#include "agentd/trees/posix_error.h"
#include "exec/change_signal.h"
#include "limits/tenant_cgroup.h"
#include "log/log.h"
#include "metrics/daemon_metrics.h"
#include "reuse/cgroup_kill.h"
#include "reuse/process_sweep.h"
#include "reuse/scratch_dirs.h"
#include "reuse/token_rotation.h"
#include "sys/awaitable.h"
#include "sys/read_file.h"

namespace agentd {
namespace {

using SteadyClock = std::chrono::steady_clock;

// A reset's token rotation and the end of its latest step, shared with the
// step's job on the blocking pool (which may outlive a reset cut short by
// the daemon's shutdown).
struct TokenSteps {
  TokenSteps(std::string token_file, std::string state_dir, std::string token, bool& replaceable)
      : rotation(std::move(token_file), std::move(state_dir), std::move(token), replaceable) {}
  TokenRotation rotation;
  std::optional<Status> ended;  // set on the io thread when a step ends
  ChangeSignal done;
  double ms = 0;  // how long the step took
};

// One step of `steps->rotation` on the blocking pool, started at once and
// awaited later (AwaitTokenStep): the commit runs beside the kill.
class TokenJob final : public BlockingJob {
 public:
  TokenJob(std::shared_ptr<TokenSteps> steps, bool commit)
      : steps_(std::move(steps)), commit_(commit) {}
  void Run() override {
    auto started = SteadyClock::now();
    status_ = commit_ ? steps_->rotation.Commit() : steps_->rotation.Stage();
    steps_->ms = std::chrono::duration<double, std::milli>(SteadyClock::now() - started).count();
  }
  void Resume() override {
    steps_->ended = std::move(status_);
    steps_->done.Notify();
  }

 private:
  std::shared_ptr<TokenSteps> steps_;
  bool commit_;
  Status status_ = Status::Ok();
};

// The end of the step started last.
asio::awaitable<Status> AwaitTokenStep(TokenSteps& steps) {
  while (!steps.ended) co_await steps.done.Wait(ChangeSignal::Clock::time_point::max());
  co_return *steps.ended;
}

void StartTokenStep(asio::thread_pool& pool, asio::any_io_executor io,
                    const std::shared_ptr<TokenSteps>& steps, bool commit) {
  steps->ended.reset();
  PostBlockingJob(pool, std::move(io), std::make_unique<TokenJob>(steps, commit));
}

// A token step's failure (io_error naming the token file), with what it
// means for the reset.
Status TokenFailure(const Status& failed, const std::string& token_file,
                    std::string_view consequence) {
  return Status::Error(ErrorCode::kIoError, failed.message() + "; " + std::string(consequence))
      .With("path", token_file);
}

}  // namespace

std::string NewBootId() {
  unsigned char bytes[16] = {};
  size_t got = 0;
  while (got < sizeof(bytes)) {
    ssize_t n = ::getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

GuestReset::GuestReset(asio::thread_pool& blocking, ExecEngine& engine, BootstrapState& bootstrap,
                       GuestResetOptions options)
    : blocking_(blocking),
      engine_(engine),
      bootstrap_(bootstrap),
      options_(std::move(options)),
      boot_id_(NewBootId()) {}

std::string_view GuestReset::state_name() const {
  switch (state_) {
    case State::kReady:
      return "ready";
    case State::kResetting:
      return "resetting";
    case State::kQuarantined:
      return "quarantined";
  }
  return "ready";
}

namespace {
// The canonical form of `path`, or `path` itself when it does not resolve.
std::string RealPathOr(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}
}  // namespace

Status GuestReset::Open(const std::string& state_dir) {
  state_dir_ = state_dir;
  std::string dir = state_dir + "/reset-baseline";
  // A reset empties each path of all but its golden copy, and each scratch
  // dir of everything: the daemon's own state (records, the golden copies)
  // must not lie inside one. Compared as real paths, so a symlink or a
  // trailing slash cannot hide the overlap.
  std::string real_state = RealPathOr(state_dir);
  auto outside = [&](const std::string& live, std::string_view what) {
    std::string real_live = RealPathOr(live);
    if (real_state == real_live || real_state.starts_with(real_live + "/")) {
      return Status::InvalidRequest("the state dir " + state_dir + " lies inside " +
                                    std::string(what) + " " + live +
                                    "; choose a --state-dir outside it");
    }
    return Status::Ok();
  };
  for (const std::string& live : options_.reset_paths) {
    AGENTD_RETURN_IF_ERROR(outside(live, "reset path"));
  }
  for (const std::string& scratch : options_.scratch_dirs) {
    AGENTD_RETURN_IF_ERROR(outside(scratch, "scratch dir"));
  }
  if (options_.sweep_ipc) {
    Result<std::vector<IpcObject>> listed = ListSysvIpc();
    if (!listed.ok()) return listed.status();
    ipc_baseline_ = std::move(*listed);
  }
  if (options_.reset_paths.empty()) return Status::Ok();
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return PosixError(errno, "cannot create", dir);
  }
  std::string overlay_dir = state_dir + "/reset-overlay";
  std::string unavailable = options_.overlay ? OverlayUnavailable() : "";
  if (options_.overlay && unavailable.empty() && ::mkdir(overlay_dir.c_str(), 0700) != 0 &&
      errno != EEXIST) {
    unavailable = "cannot create " + overlay_dir + ": " + std::strerror(errno);
  }
  for (size_t i = 0; i < options_.reset_paths.size(); ++i) {
    auto path = std::make_shared<ResetPath>();
    path->live = options_.reset_paths[i];
    path->golden = dir + "/" + std::to_string(i);
    std::string upper_dir = overlay_dir + "/" + std::to_string(i);
    std::string source =
        i < options_.reset_baselines.size() ? options_.reset_baselines[i] : path->live;
    // A golden copy made by an earlier start for the same path is kept: a
    // restart (after a quarantine, say) must not bless what a tenant left.
    std::string marker = path->golden + ".source";
    std::string want = path->live + "\n" + source + "\n";
    Result<std::string> had = ReadFileToString(marker, 1 << 16);
    bool remade = !had.ok() || *had != want;
    // An overlay of an earlier start lies over the path: kept when it will
    // be one again on the same golden copy, else taken off first (the copy
    // is made from the path's own contents, never from a tenant's upper).
    if (remade || !options_.overlay || !unavailable.empty()) {
      DetachStaleOverlay(path->live, upper_dir);
    }
    if (remade) {
      // (The fs layer's removal: std::filesystem would add 100 KiB to the
      // static binary.)
      Result<uint64_t> removed = RemoveTreeAtPath(path->golden);
      if (!removed.ok() && removed.status().code() != ErrorCode::kNotFound) {
        return removed.status();
      }
      TreeManifest from_source;
      TreeManifest& manifest = source == path->live ? path->manifest : from_source;
      AGENTD_RETURN_IF_ERROR(SnapshotTree(source, path->golden, manifest));
      AGENTD_RETURN_IF_ERROR(WriteFileAtomically(marker, want));
    }
    if (!options_.overlay) {
      path->overlay_unavailable = "--reset-overlay off";  // (the default)
    } else if (!unavailable.empty()) {
      path->overlay_unavailable = unavailable;
    } else {
      auto slot = std::make_unique<OverlaySlot>();
      slot->live = path->live;
      slot->lower = path->golden;
      slot->dir = upper_dir;
      Status mounted = OpenOverlay(*slot);
      if (mounted.ok()) {
        path->overlay = std::move(slot);
        // The overlay shows the golden copy's identities, learned by the
        // first verification's byte comparison.
        path->manifest.clear();
      } else {
        path->overlay_unavailable = mounted.message();
      }
    }
    Log(path->overlay || !options_.overlay ? LogLevel::kInfo : LogLevel::kWarn, "reset path",
        json::Object()
            .Set("path", path->live)
            .Set("golden", path->golden)
            .Set("source", source)
            .Set("mode", path->overlay ? "overlay" : "restore")
            .Set("overlay_unavailable", path->overlay_unavailable));
    paths_.push_back(std::move(path));
  }
  return Status::Ok();
}

json::Object GuestReset::reset_processes() const {
  const TenantCgroup& group = engine_.tenant_cgroup();
  json::Object out;
  out.Set("mode", group.available() ? "cgroup" : "subreaper");
  if (!group.available()) out.Set("cgroup_unavailable", group.why());
  return out;
}

json::Array GuestReset::reset_paths() const {
  json::Array out;
  for (const auto& p : paths_) {
    json::Object one;
    one.Set("path", p->live).Set("mode", p->overlay ? "overlay" : "restore");
    if (!p->overlay) one.Set("overlay_unavailable", p->overlay_unavailable);
    out.emplace_back(std::move(one));
  }
  return out;
}

asio::awaitable<std::optional<ResetReport>> GuestReset::ReportOf(
    const std::shared_ptr<ResetLedger::Entry>& entry) {
  // A refused reset is forgotten (Forget notifies); a finished one has its
  // report. Checked and waited on without an await between.
  while (!entry->report && ledger_.Find(entry->reset_id) == entry) {
    co_await entry->done.Wait(ChangeSignal::Clock::time_point::max());
  }
  co_return entry->report;
}

void GuestReset::ReleaseDetached() {
  DetachedLayers::Release(std::move(detached_), detached_generation_);
  detached_.clear();
}

asio::awaitable<void> GuestReset::WaitExecsFinished(SteadyClock::time_point deadline) {
  asio::steady_timer pause(co_await asio::this_coro::executor);
  while (!engine_.AllFinished() && SteadyClock::now() < deadline) {
    engine_.reaper().ReapAll();
    pause.expires_after(std::chrono::milliseconds(2));
    co_await pause.async_wait(kUseNothrow);
  }
}

asio::awaitable<Result<ResetReport>> GuestReset::Run(ResetRequest& request,
                                                     const std::function<void()>& close_others) {
  auto started = SteadyClock::now();
  // Where the time went, for the log line (docs/BENCHMARKS.md, "Reset").
  json::Object phases;
  auto mark = [&phases, last = started](const char* name) mutable {
    auto now = SteadyClock::now();
    phases.Set(name, std::chrono::duration<double, std::milli>(now - last).count());
    last = now;
  };
  ReleaseDetached();  // an earlier reset's, had its route not done so
  std::shared_ptr<ResetLedger::Entry> entry =
      ledger_.Begin(request.reset_id, std::string(bootstrap_.token()));
  state_ = State::kResetting;
  // Step 1 (reuse/token_rotation.h): staged now, put in place while the
  // processes die.
  std::shared_ptr<TokenSteps> token;
  asio::any_io_executor io = co_await asio::this_coro::executor;
  if (request.next && !options_.token_file.empty()) {
    token = std::make_shared<TokenSteps>(options_.token_file, state_dir_, request.next->token,
                                         token_file_replaceable_);
    StartTokenStep(blocking_, io, token, /*commit=*/false);
    Status staged = co_await AwaitTokenStep(*token);
    if (!staged.ok()) {
      state_ = State::kReady;
      ledger_.Forget(entry);
      co_return TokenFailure(staged, options_.token_file, "the reset was not started");
    }
    StartTokenStep(blocking_, io, token, /*commit=*/true);
  }
  mark("token_file_ms");
  close_others();

  std::vector<pid_t> spared = options_.spared();
  engine_.MarkResetKill();
  // The generation's cgroup first (reuse/cgroup_kill.h): every exec and
  // all it started, by the kernel's list. The subreaper walk after it
  // finds what lies outside any group (the execs' holders) and, where
  // there is no group, everything.
  CgroupKillResult by_cgroup;
  std::string group = engine_.tenant_cgroup().dir();
  auto kill_deadline = SteadyClock::now() + options_.kill_limit;
  if (!group.empty()) {
    by_cgroup = co_await KillCgroup(group, kill_deadline);
    mark("cgroup_kill_ms");
  }
  // A crashed predecessor's base: its tenant's processes are orphans
  // outside this daemon's tree, so only their group finds them.
  std::string adopted = engine_.tenant_cgroup().TakeAdopted();
  if (!adopted.empty()) {
    CgroupKillResult theirs = co_await KillCgroup(adopted, kill_deadline);
    by_cgroup.killed += theirs.killed;
    for (ResetRemaining& r : theirs.remaining) by_cgroup.remaining.push_back(std::move(r));
    mark("adopted_kill_ms");
  }
  SweepResult swept = co_await SweepProcesses(engine_.reaper(), spared, options_.kill_limit);
  mark("sweep_ms");
  engine_.KillAll();  // cgroups of limited execs, and their timers
  co_await WaitExecsFinished(SteadyClock::now() + options_.kill_limit);
  mark("exec_exits_ms");
  if (token) {
    Status committed = co_await AwaitTokenStep(*token);
    phases.Set("token_flush_ms", token->ms);  // (overlapping the kills above)
    if (!committed.ok()) {
      // The processes are ended (their records say killed_by "reset");
      // the records, files and token in force are as they were.
      state_ = State::kReady;
      ledger_.Forget(entry);
      co_return TokenFailure(committed, options_.token_file,
                             "the reset stopped after ending the generation's processes: the "
                             "exec records, files and token in force are unchanged");
    }
  }
  bool privileged = engine_.privileged_generation();  // DropAll clears it
  int64_t reset_generation = engine_.generation();
  std::vector<std::string> dirs = engine_.DropAll();
  // The next generation's execs join a fresh group; the old one goes with
  // the records (its removal fails while anything is left in it).
  std::string old_group = engine_.tenant_cgroup().Advance(engine_.generation());

  // The dropped records' dirs and spools, the reset paths, scratch dirs
  // and IPC objects, then the verification walk of each: one trip to the
  // blocking pool.
  struct Restored {
    RestoreResult files;
    std::vector<DetachedLayers> detached;
  };
  auto restore = [dirs = std::move(dirs), paths = paths_, scratch = options_.scratch_dirs,
                  sweep_ipc = options_.sweep_ipc, ipc_baseline = ipc_baseline_,
                  old_groups = std::vector<std::string>{old_group, adopted}] {
    for (const std::string& dir : dirs) ExecStore::RemoveDir(dir);
    Restored out;
    RestoreResult& all = out.files;
    for (const std::string& gone : old_groups) {
      if (gone.empty()) continue;
      std::string failed = TenantCgroup::RemoveTree(gone);
      if (!failed.empty()) all.remaining.push_back({"process", "cgroup " + gone, failed});
    }
    for (const std::string& dir : scratch) {
      ScratchResult emptied = EmptyScratchDir(dir);
      all.removed_entries += emptied.removed_entries;
      std::vector<ResetRemaining> left = ScratchLeft(dir);
      // What the removal could not do says why; the walk adds the rest.
      if (emptied.remaining.empty()) emptied.remaining = std::move(left);
      for (ResetRemaining& r : emptied.remaining) all.remaining.push_back(std::move(r));
    }
    if (sweep_ipc) {
      IpcSweepResult ipc = RemoveIpcBeyond(ipc_baseline);
      all.removed_ipc_objects = ipc.removed;
      std::vector<ResetRemaining> left = IpcLeft(ipc_baseline);
      if (ipc.remaining.empty()) ipc.remaining = std::move(left);
      for (ResetRemaining& r : ipc.remaining) all.remaining.push_back(std::move(r));
    }
    for (const auto& p : paths) {
      if (p->overlay) {
        OverlaySwap swap = SwapOverlay(*p->overlay);
        out.detached.push_back(std::move(swap.old));
        all.removed_entries += swap.removed_entries;
        all.removed_bytes += swap.removed_bytes;
        std::vector<ResetRemaining> left = swap.remaining;
        if (left.empty()) left = OverlayLeft(*p->overlay);
        // Verified as without overlays, the mount not trusted.
        if (left.empty()) left = CompareTrees(p->golden, p->live, p->manifest, &p->manifest);
        for (ResetRemaining& r : left) all.remaining.push_back(std::move(r));
        continue;
      }
      RestoreResult one = RestoreTree(p->golden, p->live, p->manifest);
      all.removed_entries += one.removed_entries;
      all.removed_bytes += one.removed_bytes;
      std::vector<ResetRemaining> diff = CompareTrees(p->golden, p->live, p->manifest);
      // What the restore could not do says why; the walk adds the rest.
      for (ResetRemaining& d : diff) {
        bool named = std::any_of(one.remaining.begin(), one.remaining.end(),
                                 [&d](const ResetRemaining& r) { return r.name == d.name; });
        if (!named) one.remaining.push_back(std::move(d));
      }
      for (ResetRemaining& r : one.remaining) all.remaining.push_back(std::move(r));
    }
    return out;
  };
  Restored restored = co_await RunBlocking(blocking_, std::move(restore));
  RestoreResult& files = restored.files;
  for (DetachedLayers& l : restored.detached) detached_.push_back(std::move(l));
  detached_generation_ = reset_generation;
  mark("records_and_files_ms");

  ResetReport report;
  report.generation = engine_.generation();
  report.killed_processes = by_cgroup.killed + swept.killed;
  report.removed_entries = files.removed_entries;
  report.removed_bytes = files.removed_bytes;
  report.removed_ipc_objects = files.removed_ipc_objects;
  // Verification trusts nothing above: a fresh walk.
  report.remaining = std::move(by_cgroup.remaining);
  for (ResetRemaining& r : ProcessesLeft(spared)) {
    bool named = std::any_of(report.remaining.begin(), report.remaining.end(),
                             [&r](const ResetRemaining& c) { return c.name == r.name; });
    if (!named) report.remaining.push_back(std::move(r));
  }
  mark("verify_processes_ms");
  for (ResetRemaining& r : files.remaining) report.remaining.push_back(std::move(r));
  report.privileged_generation = privileged;
  if (privileged && options_.requires_restricted) {
    report.remaining.push_back(
        {"privilege", "generation " + std::to_string(reset_generation),
         "an exec ran unrestricted as root, and --reset-requires-restricted is set: files "
         "outside the reset paths may have changed"});
  }
  report.clean = report.remaining.empty();
  if (report.clean) {
    if (request.next) {
      bootstrap_.Install(std::move(*request.next));
    } else {
      bootstrap_.Reopen();
    }
    state_ = State::kReady;
  } else {
    // Nothing is installed: the gate refuses every route but health,
    // metrics and recorded reports, and the token in force can still read
    // metrics while an operator looks.
    quarantine_items_ = report.remaining;
    state_ = State::kQuarantined;
  }
  report.duration_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - started).count();
  Log(report.clean ? LogLevel::kInfo : LogLevel::kError,
      report.clean ? "guest reset" : "guest quarantined",
      json::Object()
          .Set("reset_id", request.reset_id)
          .Set("generation", report.generation)
          .Set("killed_processes", report.killed_processes)
          .Set("processes_by", group.empty() ? std::string("subreaper") : by_cgroup.method)
          .Set("remaining", report.remaining.size())
          .Set("duration_ms", report.duration_ms)
          .Set("phases", std::move(phases)));
  metrics::DaemonMetrics& m = metrics::Daemon();
  m.resets.With({report.clean ? "clean" : "quarantined"}).Inc();
  m.reset_duration.Observe(std::chrono::duration<double>(SteadyClock::now() - started).count());
  for (const ResetRemaining& r : report.remaining) m.reset_remaining.With({r.kind}).Inc();
  ResetLedger::Finish(*entry, report);
  co_return report;
}

}  // namespace agentd
