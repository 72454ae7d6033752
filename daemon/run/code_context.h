// CodeContext: one stateful context (docs/PROTOCOL.md, "Contexts"): a
// long-lived interpreter that runs code cells in one namespace, each
// answered exactly like a /v1/run.
//
// The interpreter is an internal exec of the engine (every exec option
// and limit applies) running the context driver (run/code_drivers.h),
// spoken to over a socket given to it as descriptor 3. A cell's output is
// the part of the interpreter's streams between the end of the previous
// cell's token and its own (the driver writes the token to both streams
// after the cell; its answer arrives first, and the pumps catch up).
//
// Runs are serialized in arrival order by one pump coroutine; each run's
// answer is kept under its run_id (the last kReplayAnswers), so a retry
// waits for or replays it instead of running the code again. A run goes
// on when its client leaves: the answer waits for its retry. A cell past
// its deadline, or a limit, kills the interpreter: the context has ended,
// and says what ended it. Used only on the io thread; held by shared_ptr
// (the pump keeps it alive while runs are queued).
#pragma once

#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agentd/protocol/context.h"
#include "agentd/trees/unique_fd.h"
#include "exec/change_signal.h"
#include "exec/exec_engine.h"
#include "run/code_run.h"
#include "run/context_notes.h"

namespace agentd {

// Answers kept for a retried run_id, per context.
inline constexpr size_t kReplayAnswers = 16;
// Runs waiting behind the one in progress, per context.
inline constexpr size_t kContextQueue = 16;

// Two create requests for one id are the same exactly when these are equal.
std::string ContextFingerprint(const ContextCreateRequest& request);

class CodeContext : public std::enable_shared_from_this<CodeContext> {
 public:
  CodeContext(ExecEngine& engine, asio::thread_pool& blocking, const CodeRunOptions& options,
              ContextCreateRequest request);
  ~CodeContext();

  // Starts the interpreter; an error (runtime unavailable, limits the
  // guest cannot apply, a failed spawn) leaves the context ended.
  asio::awaitable<Status> Start();
  // Runs one cell (or replays the answer of an earlier one with this
  // run_id): 410 context_gone once ended, 503 context_busy when
  // kContextQueue runs wait, 409 run_id_conflict for a run_id of other code.
  // The answer comes encoded (a RunResponse), as kept for retries.
  asio::awaitable<Result<json::Value>> Run(ContextRunRequest request);
  // Kills the interpreter and waits for it to exit; queued runs answer
  // context_gone. `reason`: "deleted", "reset".
  asio::awaitable<void> End(std::string reason);

  // Upgrade in place (run/context_handover.cc): an idle context's note
  // with its kept answers and its channel's descriptor (also appended to
  // `fds`), its interpreter marked for the engine's handover; 409
  // exec_running while a run is in progress or queued. The next binary
  // takes it back as after a crash (TakeBack), with no run to settle.
  Result<json::Object> HandOver(std::vector<int>& fds);

  // A context a crash ended (run/context_notes.h): listed as ended with
  // what its note says, its id answering as any ended context's.
  static std::shared_ptr<CodeContext> Lost(ExecEngine& engine, asio::thread_pool& blocking,
                                           const CodeRunOptions& options, ContextNote note);
  // After a crash or an upgrade (run/context_takeback.cc): the context of
  // `note` back on its interpreter `exec`, still running (under its holder,
  // or the daemon's child still), and its channel (kept by the holder, or
  // inherited). A run that was in progress at a crash is settled first
  // (Resync); its retry answers 410 run_lost.
  static std::shared_ptr<CodeContext> TakeBack(ExecEngine& engine, asio::thread_pool& blocking,
                                               const CodeRunOptions& options,
                                               const ContextNote& note, ExecView exec,
                                               UniqueFd channel);
  // Writes its note as of now.
  void SaveNote() { WriteNote(nullptr); }
  void RemoveNote() const;

  // Since when a run is in progress or queued (for an upgrade that waits:
  // upgrade/upgrader.h); nullopt while idle.
  std::optional<std::chrono::steady_clock::time_point> BusySince() const;

  ContextInfo Info() const;
  const ContextCreateRequest& request() const { return request_; }
  const std::string& fingerprint() const { return fingerprint_; }
  bool ended() const;
  int64_t generation() const { return generation_; }
  // The interpreter's exec id ("": none).
  std::string exec_id() const { return exec_ ? exec_->id() : std::string(); }

 private:
  struct Pending;
  struct Reply;

  static asio::awaitable<void> PumpOf(std::shared_ptr<CodeContext> self);
  // Writes one request frame to the interpreter and reads its answer
  // frame; the outcome goes into `reply`, and the exec's change signal
  // wakes the run waiting for it.
  static asio::awaitable<void> Converse(std::shared_ptr<asio::posix::stream_descriptor> channel,
                                        std::string frame, std::shared_ptr<Reply> reply,
                                        ExecView exec);
  asio::awaitable<void> Pump();
  asio::awaitable<RunResponse> Execute(const ContextRunRequest& request);
  asio::awaitable<bool> AwaitReply(const std::shared_ptr<Reply>& reply,
                                   ChangeSignal::Clock::time_point deadline);
  // Once `reply` arrived: waits (until `until`) for the pumps to bring
  // each stream it marked up to its token, and moves where the next
  // cell's output begins past it. Returns where this cell's output ended
  // in stdout and stderr.
  asio::awaitable<std::pair<uint64_t, uint64_t>> PassTokens(const Reply& reply,
                                                            ChangeSignal::Clock::time_point until);
  // One request to the driver: the 4-byte length and the JSON.
  static std::string Frame(int64_t seq, const std::string& code, const std::string& token);
  std::string TokenFor(int64_t seq) const;
  int64_t TimeoutOf(const ContextRunRequest& request) const;
  // The note as of now: a run in progress (`running`) with its deadline,
  // the kept answers themselves with `answers` (for an upgrade).
  ContextNote NoteOf(const Pending* running, bool answers);
  void WriteNote(const Pending* running);
  // run/context_takeback.cc: the run that was in progress at the crash,
  // `lost` (its retry waits for this), settled before any other.
  static asio::awaitable<void> ResyncOf(std::shared_ptr<CodeContext> self,
                                        std::shared_ptr<Pending> lost, int64_t lost_seq,
                                        int64_t timeout_sec,
                                        std::chrono::system_clock::time_point deadline);
  asio::awaitable<void> Resync(const std::shared_ptr<Pending>& lost, int64_t lost_seq,
                               int64_t timeout_sec, std::chrono::system_clock::time_point deadline);
  void NoteEnd(std::string reason);
  Status GoneError() const;
  // GoneError() naming the run a resync gave up on (run/context_takeback.cc).
  Status LostRunGone(const std::string& run_id) const;

  ExecEngine& engine_;
  asio::thread_pool& blocking_;
  const CodeRunOptions& options_;
  const ContextCreateRequest request_;
  const std::string fingerprint_;
  const int64_t generation_;
  std::string cwd_;
  std::string nonce_;
  std::chrono::system_clock::time_point created_at_;
  std::optional<ExecView> exec_;
  std::shared_ptr<asio::posix::stream_descriptor> channel_;
  int64_t seq_ = 0;
  int64_t runs_ = 0;
  bool busy_ = false;
  bool pumping_ = false;
  std::chrono::steady_clock::time_point pumping_since_;
  // Where the next cell's output begins in each stream.
  uint64_t out_at_ = 0;
  uint64_t err_at_ = 0;
  std::optional<std::string> ended_reason_;
  std::optional<std::string> killed_by_;
  std::optional<LimitHit> limit_;
  std::deque<std::shared_ptr<Pending>> queue_;
  std::vector<std::shared_ptr<Pending>> replay_;  // oldest first
  uint64_t pid_start_ = 0;                        // the interpreter's, for its note
  std::optional<ContextNote> lost_;               // ended by a crash: as noted
};

}  // namespace agentd
