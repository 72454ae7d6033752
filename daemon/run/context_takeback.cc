// After a daemon crash (docs/OPERATIONS.md, "Surviving a crash"): a
// context taken back from its note (run/context_notes.h) on its
// interpreter, which its holder kept running together with the daemon's
// end of the context's channel (proc/exec_holder.h). The interpreter never
// noticed: the next cell goes to it as if the daemon had not died, and
// sees every name defined before. An upgrade in place takes its contexts
// back the same way, from the notes it handed over
// (run/context_handover.cc), which carry the kept answers too and never a
// run in progress.
//
// A run in progress at the crash cannot be answered: what its answer needs
// besides the interpreter (the file scan before it, the client waiting)
// died with the daemon. It is settled before any other run by a cell of no
// code (the resync) sent after it: the driver answers cells in order and
// names each (its "seq"), so when the first answer is the lost cell's, the
// interpreter had it and ran it to its end (that answer is discarded, its
// output skipped); when it is the resync's, either the dead daemon had read
// the lost cell's answer already (its token is in the streams) or the crash
// came before the cell was sent and none of it ran. Either way the context goes on, and the
// run's retry answers 410 run_lost saying which. The resync waits for the
// lost cell until that run's own deadline; past it the interpreter is
// ended as that run's timeout would have ended it, and the retry answers
// 410 context_gone with lost_run. (A cell whose sending the crash cut
// short, code larger than the socket's buffer, leaves the driver reading
// the resync as the rest of it: it answers nothing, or exits, and the
// context ends the same way.)
#include "agentd/protocol/time_format.h"
#include "log/log.h"
#include "run/code_context.h"
#include "run/code_context_parts.h"

namespace agentd {
namespace {

using SteadyClock = ChangeSignal::Clock;
using SystemClock = std::chrono::system_clock;

// How long a lost cell's answer, or the resync's, may take past the lost
// run's deadline (both may have been written while no daemon ran).
constexpr std::chrono::seconds kResyncGrace{2};

// A retried run_id whose answer the crash took. `ran`: whether the
// interpreter ran the cell (to its end: `exit_code`).
Status RunLost(const std::string& context, const std::string& run_id, bool in_progress, bool ran,
               std::optional<int64_t> exit_code) {
  std::string message = "run \"" + run_id + "\" of context \"" + context + "\" ";
  if (!in_progress) {
    message +=
        "was answered before the daemon crashed, and its answer was kept only in memory: it is "
        "lost. The cell ran; the context survived with what it did";
  } else if (ran) {
    message += "was in progress when the daemon crashed: the interpreter ran the cell to its end";
    if (exit_code) message += " (exit code " + std::to_string(*exit_code) + ")";
    message += ", but its answer is lost. The context survived with what the cell did";
  } else {
    message +=
        "was in progress when the daemon crashed, before its code reached the interpreter: none "
        "of it ran. The context survived; run the code again under another run_id";
  }
  Status s = Status::Error(ErrorCode::kRunLost, message);
  s.With("id", context).With("run_id", run_id).With("ran", ran).With("reason", "daemon_restart");
  if (exit_code) s.With("exit_code", *exit_code);
  return s;
}

}  // namespace

std::shared_ptr<CodeContext> CodeContext::TakeBack(ExecEngine& engine, asio::thread_pool& blocking,
                                                   const CodeRunOptions& options,
                                                   const ContextNote& note, ExecView exec,
                                                   UniqueFd channel) {
  auto c = std::make_shared<CodeContext>(engine, blocking, options, note.request);
  c->exec_ = exec;
  c->channel_ =
      std::make_shared<asio::posix::stream_descriptor>(engine.executor(), channel.release());
  c->cwd_ = note.info.cwd;
  c->nonce_ = note.nonce;
  c->created_at_ = ParseRfc3339(note.info.created_at).value_or(c->created_at_);
  c->seq_ = note.seq;
  c->runs_ = note.info.runs;
  c->out_at_ = note.out_at;
  c->err_at_ = note.err_at;
  c->pid_start_ = note.pid_start;
  for (const ContextNote::Answered& a : note.answered) {
    auto p = std::make_shared<Pending>();
    p->request.run_id = a.run_id;
    p->digest = a.digest;
    p->lost = a.lost;
    if (a.answer) {
      p->answer = *a.answer;  // handed over by an upgrade
    } else if (a.lost) {
      p->answer = RunLost(note.request.id, a.run_id, true, a.lost->ran, a.lost->exit_code);
    } else {
      p->answer = RunLost(note.request.id, a.run_id, false, true, std::nullopt);
    }
    p->done = true;
    c->replay_.push_back(std::move(p));
  }
  if (!note.run_in_progress) return c;
  auto lost = std::make_shared<Pending>();
  lost->request.run_id = note.run_id;
  lost->digest = note.run_digest;
  if (note.run_id) {
    c->replay_.push_back(lost);
    if (c->replay_.size() > kReplayAnswers) c->replay_.erase(c->replay_.begin());
  }
  // Runs that come meanwhile queue behind it, as behind any run.
  c->busy_ = true;
  c->pumping_ = true;
  c->pumping_since_ = SteadyClock::now();  // an upgrade waits for it (BusySince)
  SystemClock::time_point deadline{std::chrono::milliseconds(note.run_deadline_ms)};
  asio::co_spawn(engine.executor(),
                 ResyncOf(c, std::move(lost), note.seq + 1, note.run_timeout_sec, deadline),
                 asio::detached);
  return c;
}

asio::awaitable<void> CodeContext::ResyncOf(std::shared_ptr<CodeContext> self,
                                            std::shared_ptr<Pending> lost, int64_t lost_seq,
                                            int64_t timeout_sec, SystemClock::time_point deadline) {
  co_await self->Resync(lost, lost_seq, timeout_sec, deadline);
  co_await self->Pump();
}

asio::awaitable<void> CodeContext::Resync(const std::shared_ptr<Pending>& lost, int64_t lost_seq,
                                          int64_t timeout_sec, SystemClock::time_point deadline) {
  ExecView exec = *exec_;
  auto left = std::max(SystemClock::duration::zero(), deadline - SystemClock::now());
  auto until =
      SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(left) + kResyncGrace;
  seq_ = std::max(seq_, lost_seq);
  int64_t resync_seq = ++seq_;
  auto reply = std::make_shared<Reply>();
  reply->token = TokenFor(resync_seq);
  asio::co_spawn(co_await asio::this_coro::executor,
                 Converse(channel_, Frame(resync_seq, "", reply->token), reply, exec),
                 asio::detached);
  bool answered = co_await AwaitReply(reply, until);
  bool ran = false;
  std::optional<int64_t> lost_exit;
  if (answered && reply->seq == lost_seq) {
    // The lost cell's answer: its output ends at its token.
    ran = true;
    lost_exit = reply->exit_code;
    reply->token = TokenFor(lost_seq);
    co_await PassTokens(*reply, SteadyClock::now() + kResyncGrace);
    reply = std::make_shared<Reply>();
    reply->token = TokenFor(resync_seq);
    asio::co_spawn(co_await asio::this_coro::executor, Converse(channel_, "", reply, exec),
                   asio::detached);
    answered = co_await AwaitReply(reply, std::max(until, SteadyClock::now() + kResyncGrace));
  }
  bool in_step = answered && reply->seq == resync_seq;
  uint64_t out_from = out_at_;
  uint64_t err_from = err_at_;
  if (in_step) co_await PassTokens(*reply, SteadyClock::now() + kResyncGrace);
  if (in_step && !ran) {
    // The dead daemon may have read the lost cell's answer itself (and
    // died building the run's): then its token is in the streams, before
    // the resync's. It ran; its exit code went with that daemon.
    std::string token = TokenFor(lost_seq);
    ran = FindCellToken(exec.log(Stream::kStdout), token, &out_from).has_value() ||
          FindCellToken(exec.log(Stream::kStderr), token, &err_from).has_value();
  }
  if (!in_step && !exec.finished()) {
    if (answered) {
      // An answer for no cell this daemon knows: the conversation cannot
      // go on.
      NoteEnd("daemon_restart");
      KillRequest kill;
      kill.signal = "KILL";
      (void)engine_.Kill(exec.id(), kill);
    } else {
      engine_.Expire(exec, timeout_sec);  // the lost run's deadline, as its own would
    }
    while (!exec.finished()) co_await exec.WaitChange(SteadyClock::time_point::max());
  }
  if (!in_step) NoteEnd("exited");
  (void)engine_.TakeEgress(exec.id());  // the lost run's attempts are no later run's
  busy_ = false;
  if (lost->request.run_id) {
    if (in_step) {
      lost->lost = LostRun{ran, lost_exit};
      lost->answer = RunLost(request_.id, *lost->request.run_id, true, ran, lost_exit);
    } else {
      lost->lost = LostRun{ran, lost_exit, true};
      lost->answer = LostRunGone(*lost->request.run_id);
    }
  }
  lost->done = true;
  lost->signal.Notify();
  Log(in_step ? LogLevel::kInfo : LogLevel::kWarn, "the run in progress at the crash settled",
      json::Object()
          .Set("id", request_.id)
          .Set("ran", ran)
          .Set("context_goes_on", in_step)
          .Set("run_id",
               lost->request.run_id ? json::Value(*lost->request.run_id) : json::Value()));
  SaveNote();
}

}  // namespace agentd
