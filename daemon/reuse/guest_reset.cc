#include "reuse/guest_reset.h"

#include <sys/random.h>

#include "log/log.h"
#include "reuse/process_sweep.h"
#include "sys/awaitable.h"
#include "sys/read_file.h"

namespace agentd {
namespace {

using SteadyClock = std::chrono::steady_clock;

Status WriteTokenFile(const std::string& path, const std::string& token) {
  Status s = WriteFileAtomically(path, token + "\n");
  if (s.ok()) return s;
  return Status::Error(ErrorCode::kIoError, "cannot write the next token to --token-file " + path +
                                                " (" + s.message() + "); the reset was not started")
      .With("path", path);
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

asio::awaitable<std::optional<ResetReport>> GuestReset::ReportOf(
    const std::shared_ptr<ResetLedger::Entry>& entry) {
  // A refused reset is forgotten (Forget notifies); a finished one has its
  // report. Checked and waited on without an await between.
  while (!entry->report && ledger_.Find(entry->reset_id) == entry) {
    co_await entry->done.Wait(ChangeSignal::Clock::time_point::max());
  }
  co_return entry->report;
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
  std::shared_ptr<ResetLedger::Entry> entry =
      ledger_.Begin(request.reset_id, std::string(bootstrap_.token()));
  state_ = State::kResetting;
  if (request.next && !options_.token_file.empty()) {
    std::string path = options_.token_file;
    std::string token = request.next->token;
    auto write = [path, token] { return WriteTokenFile(path, token); };
    Status written = co_await RunBlocking(blocking_, std::move(write));
    if (!written.ok()) {
      state_ = State::kReady;
      ledger_.Forget(entry);
      co_return written;
    }
  }
  close_others();

  std::vector<pid_t> spared = options_.spared();
  SweepResult swept = co_await SweepProcesses(engine_.reaper(), spared, options_.kill_limit);
  engine_.KillAll();  // cgroups of limited execs, and their timers
  co_await WaitExecsFinished(SteadyClock::now() + options_.kill_limit);
  std::vector<std::string> dirs = engine_.DropAll();
  auto remove = [dirs] {
    for (const std::string& dir : dirs) ExecStore::RemoveDir(dir);
    return true;
  };
  co_await RunBlocking(blocking_, std::move(remove));

  ResetReport report;
  report.generation = engine_.generation();
  report.killed_processes = swept.killed;
  // Verification trusts nothing above: a fresh walk.
  report.remaining = ProcessesLeft(spared);
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
          .Set("remaining", report.remaining.size())
          .Set("duration_ms", report.duration_ms));
  ResetLedger::Finish(*entry, report);
  co_return report;
}

}  // namespace agentd
