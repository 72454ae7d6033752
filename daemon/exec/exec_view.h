// ExecView: what the layers above the engine (routes, the /v1/run use
// case) may see of one exec: its state, its output for reading, and a way
// to wait for the next change. Nothing in it changes the exec; every change
// goes through ExecEngine, which alone holds the mutable ExecRecord.
//
// A view shares the record (like the coroutines serving it), so a release
// never pulls the record from under a reader: the view then reports
// ended(). Used only on the io thread.
#pragma once

#include <asio.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "agentd/protocol/exec.h"
#include "exec/change_signal.h"
#include "exec/exec_record.h"
#include "spool/output_log.h"

namespace agentd {

namespace testing {
class EngineFixture;
}

class ExecView {
 public:
  using Clock = ChangeSignal::Clock;

  const std::string& id() const { return rec_->id; }
  // The wire object (docs/PROTOCOL.md, "Exec"), as it is now.
  ExecInfo Info() const { return rec_->Info(); }
  // The output is complete: the leader exited and its streams drained.
  bool finished() const { return rec_->finished(); }
  // Nothing more will be written to either stream: finished, or the
  // record was released (acked, reset) while a reader still held it.
  bool ended() const { return rec_->finished() || rec_->released; }

  // One stream's output, for reading (Read, next, retained_from, fd).
  const OutputLog& log(Stream s) const { return rec_->log(s); }
  // A reader's position in one stream; the bytes at and after it stay on
  // disk until the pin moves or goes (the reader's own bookkeeping, not
  // the exec's state).
  OutputLog::Pin Pin(Stream s, uint64_t offset) const { return {rec_->log(s), offset}; }
  // A live reader's tap on one stream, empty at `offset` (spool/output_log.h).
  OutputLog::Tap Tap(Stream s, uint64_t offset) const { return {rec_->log(s), offset}; }

  // Completes at the exec's next change (new output, a state change) or at
  // `deadline`; spurious wake-ups happen, so callers re-check.
  asio::awaitable<void> WaitChange(Clock::time_point deadline) const {
    return rec_->changed.Wait(deadline);
  }
  // The signal WaitChange() waits on, for a wait that something else (the
  // client's socket) may also end early: a Notify() only wakes waiters,
  // who re-check what they wait for.
  ChangeSignal& change_signal() const { return rec_->changed; }

  // Two views of one exec are equal (a repeated start answers the same exec).
  bool operator==(const ExecView& other) const { return rec_ == other.rec_; }

 private:
  friend class ExecEngine;
  friend class testing::EngineFixture;  // unit tests look at the engine's side

  explicit ExecView(std::shared_ptr<ExecRecord> rec) : rec_(std::move(rec)) {}
  const std::shared_ptr<ExecRecord>& record() const { return rec_; }

  std::shared_ptr<ExecRecord> rec_;
};

}  // namespace agentd
