#include "run/code_context.h"

#include <sys/random.h>
#include <sys/socket.h>

#include <algorithm>

#include "agentd/protocol/sha256.h"
#include "agentd/protocol/time_format.h"
#include "proc/runtimes.h"
#include "run/artifacts.h"
#include "run/change_scan.h"
#include "run/code_context_parts.h"
#include "run/code_drivers.h"
#include "run/run_answer.h"
#include "sys/awaitable.h"
#include "sys/process_start_time.h"

namespace agentd {
namespace {

using SteadyClock = ChangeSignal::Clock;

// The driver's answer to one cell: its exit code, its exception report
// (kRunReportBytes) and a little JSON around them.
constexpr uint32_t kMaxReplyBytes = kRunReportBytes + 1024;
// How long a cell's output may trail its answer in the pumps, past its
// deadline, before the answer is built from what arrived.
constexpr std::chrono::seconds kTokenGrace{2};
// Bytes of one read while looking for a token.
constexpr uint64_t kTokenReadBytes = 64 << 10;

std::string Nonce() {
  unsigned char raw[12] = {};
  size_t got = 0;
  while (got < sizeof raw) {
    ssize_t n = ::getrandom(raw + got, sizeof raw - got, 0);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

}  // namespace

std::optional<uint64_t> FindCellToken(const OutputLog& log, const std::string& token,
                                      uint64_t* at) {
  std::string chunk;
  uint64_t from = std::max(*at, log.retained_from());
  while (from < log.next()) {
    chunk.clear();
    uint64_t want = std::min<uint64_t>(kTokenReadBytes, log.next() - from);
    if (!log.Read(from, want, &chunk).ok() || chunk.empty()) break;
    size_t pos = chunk.find(token);
    if (pos != std::string::npos) return from + pos;
    uint64_t keep = std::min<uint64_t>(chunk.size(), token.size() - 1);
    if (from + chunk.size() == log.next()) {
      *at = from + chunk.size() - keep;
      break;
    }
    from += chunk.size() - keep;
    *at = from;
  }
  return std::nullopt;
}

std::string ContextFingerprint(const ContextCreateRequest& request) {
  return Sha256Hex(json::Serialize(EncodeContextCreateRequest(request)));
}

CodeContext::CodeContext(ExecEngine& engine, asio::thread_pool& blocking,
                         const CodeRunOptions& options, ContextCreateRequest request)
    : engine_(engine),
      blocking_(blocking),
      options_(options),
      request_(std::move(request)),
      fingerprint_(ContextFingerprint(request_)),
      generation_(engine.generation()),
      cwd_(request_.spec.cwd.value_or(DefaultRunCwd(options.workdir))),
      nonce_(Nonce()),
      created_at_(std::chrono::system_clock::now()) {}

CodeContext::~CodeContext() {
  if (channel_) {
    asio::error_code ignored;
    channel_->close(ignored);
  }
}

bool CodeContext::ended() const { return ended_reason_.has_value() || !exec_ || exec_->finished(); }

asio::awaitable<Status> CodeContext::Start() {
  ExecStartRequest exec_request = RunToExecRequest(request_.spec, cwd_, 0);
  exec_request.timeout_sec.reset();
  // Host names in egress rules: resolved at each start (create, reset).
  if (Status s = co_await engine_.ResolveEgressNames(exec_request); !s.ok()) {
    ended_reason_ = "failed";
    co_return s;
  }
  Result<ExecEngine::Prepared> prepared = engine_.Prepare(std::move(exec_request));
  if (!prepared.ok()) {
    ended_reason_ = "failed";
    co_return prepared.status();
  }
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    ended_reason_ = "failed";
    co_return Status::Error(ErrorCode::kInternal, "socketpair failed for the context's channel");
  }
  UniqueFd ours(pair[0]);
  UniqueFd theirs(pair[1]);
  prepared->argv =
      request_.spec.runtime == Runtime::kTs ? TsContextDriverArgv() : PythonContextDriverArgv();
  prepared->fd3 = theirs.get();
  prepared->channel = ours.get();  // its holder keeps a duplicate through a crash
  prepared->open_ended = true;
  Result<ExecEngine::Started> started = engine_.StartRun(std::move(*prepared));
  if (!started.ok()) {
    ended_reason_ = "failed";
    co_return started.status();
  }
  exec_ = started->exec;
  co_await engine_.Launched(*exec_);
  theirs.reset();  // the interpreter holds it now; its exit closes the channel
  channel_ = std::make_shared<asio::posix::stream_descriptor>(co_await asio::this_coro::executor,
                                                              ours.release());
  if (exec_->finished()) {
    NoteEnd("exited");
    ExecInfo info = exec_->Info();
    co_return Status::Error(ErrorCode::kInternal, "the context's interpreter did not start: " +
                                                      info.error.value_or("it exited at once"));
  }
  co_return Status::Ok();
}

Status CodeContext::GoneError() const {
  std::string why = ended_reason_.value_or("exited");
  std::string message = "context \"" + request_.id + "\" has ended (" + why;
  if (limit_) message += ": " + DescribeLimit(*limit_) + " exceeded";
  if (lost_ && why == "daemon_restart") {
    message +=
        ": the daemon died and was restarted, and nothing kept the context's interpreter "
        "(--exec-holder=off, or its holder was gone)";
    if (lost_->run_in_progress) {
      message += ", and its run " + (lost_->run_id ? "\"" + *lost_->run_id + "\" " : "") +
                 "in progress then has no answer: its outcome is unknown";
    }
  }
  message += "); reset it or create another";
  Status s = Status::Error(ErrorCode::kContextGone, message);
  s.With("id", request_.id).With("ended_reason", why);
  if (lost_ && lost_->run_in_progress) {
    s.With("lost_run", lost_->run_id ? json::Value(*lost_->run_id) : json::Value(true));
  }
  if (killed_by_) s.With("killed_by", *killed_by_);
  if (limit_) s.With("limit", EncodeLimitHit(*limit_));
  return s;
}

Status CodeContext::LostRunGone(const std::string& run_id) const {
  Status gone = GoneError();
  gone.With("lost_run", run_id);
  return gone;
}

void CodeContext::NoteEnd(std::string reason) {
  if (ended_reason_) return;
  if (exec_ && exec_->finished()) {
    ExecInfo info = exec_->Info();
    killed_by_ = info.killed_by;
    limit_ = info.limit;
    if (info.limit && reason == "exited") reason = "limit";
    if (info.killed_by == "reset" && reason == "exited") reason = "reset";
  }
  ended_reason_ = std::move(reason);
}

std::shared_ptr<CodeContext> CodeContext::Lost(ExecEngine& engine, asio::thread_pool& blocking,
                                               const CodeRunOptions& options, ContextNote note) {
  auto c = std::make_shared<CodeContext>(engine, blocking, options, note.request);
  c->cwd_ = note.info.cwd;
  c->runs_ = note.info.runs;
  c->created_at_ = ParseRfc3339(note.info.created_at).value_or(c->created_at_);
  c->ended_reason_ = note.info.ended_reason;
  c->killed_by_ = note.info.killed_by;
  c->limit_ = note.info.limit;
  c->lost_ = std::move(note);
  // A run a resync gave up on ended the context: its retry still says so.
  for (const ContextNote::Answered& a : c->lost_->answered) {
    if (!a.lost || !a.lost->context_gone) continue;
    auto p = std::make_shared<Pending>();
    p->request.run_id = a.run_id;
    p->digest = a.digest;
    p->lost = a.lost;
    p->answer = c->LostRunGone(a.run_id);
    p->done = true;
    c->replay_.push_back(std::move(p));
  }
  return c;
}

std::string CodeContext::Frame(int64_t seq, const std::string& code, const std::string& token) {
  std::string body =
      json::Serialize(json::Object().Set("seq", seq).Set("code", code).Set("token", token));
  std::string frame(4, '\0');
  for (int i = 0; i < 4; ++i) frame[i] = static_cast<char>((body.size() >> (24 - 8 * i)) & 0xff);
  frame += body;
  return frame;
}

std::string CodeContext::TokenFor(int64_t seq) const {
  return "\x1f"
         "agentd-cell-end-" +
         nonce_ + "-" + std::to_string(seq) + "\x1f";
}

int64_t CodeContext::TimeoutOf(const ContextRunRequest& request) const {
  return std::min(request.timeout_sec.value_or(options_.default_timeout_sec), kMaxRunTimeoutSec);
}

void CodeContext::WriteNote(const Pending* running) {
  if (options_.context_notes_dir.empty() || lost_) return;
  WriteContextNote(options_.context_notes_dir, NoteOf(running, false));
}

ContextNote CodeContext::NoteOf(const Pending* running, bool answers) {
  ContextNote note;
  note.request = request_;
  note.info = Info();
  if (pid_start_ == 0 && exec_ && !exec_->finished()) {
    pid_start_ = ProcessStartTime(static_cast<pid_t>(note.info.pid)).value_or(0);
  }
  note.pid_start = pid_start_;
  if (exec_) {
    note.exec = exec_->id();
    note.nonce = nonce_;
    note.seq = seq_;
    note.out_at = out_at_;
    note.err_at = err_at_;
    for (const std::shared_ptr<Pending>& p : replay_) {
      // An answer, or one an earlier crash took: never run again.
      bool kept = p->answer.ok() || p->answer.status().code() == ErrorCode::kRunLost || p->lost;
      if (!p->done || !kept || !p->request.run_id) continue;
      note.answered.push_back({*p->request.run_id, p->digest, std::nullopt, p->lost});
      if (answers && p->answer.ok()) note.answered.back().answer = *p->answer;
    }
  }
  if (running) {
    note.run_in_progress = true;
    note.run_id = running->request.run_id;
    note.run_digest = running->digest;
    note.run_timeout_sec = TimeoutOf(running->request);
    note.run_deadline_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(
            (std::chrono::system_clock::now() + std::chrono::seconds(note.run_timeout_sec))
                .time_since_epoch())
            .count();
  }
  return note;
}

void CodeContext::RemoveNote() const {
  if (!options_.context_notes_dir.empty()) {
    RemoveContextNote(options_.context_notes_dir, request_.id);
  }
}

ContextInfo CodeContext::Info() const {
  if (lost_) {
    ContextInfo c = lost_->info;
    c.state = "ended";
    c.ended_reason = ended_reason_;
    return c;
  }
  ContextInfo c;
  c.id = request_.id;
  c.runtime = std::string(RuntimeName(request_.spec.runtime));
  c.state = ended() ? "ended" : (busy_ ? "running" : "ready");
  c.cwd = cwd_;
  c.runs = runs_;
  c.created_at = FormatRfc3339(created_at_);
  if (exec_) {
    ExecInfo info = exec_->Info();
    c.pid = info.pid;
    c.profile = info.profile;
    c.network = info.network;
    if (!info.running || ended_reason_) {
      c.killed_by = killed_by_ ? killed_by_ : info.killed_by;
      c.limit = limit_ ? limit_ : info.limit;
    }
  }
  if (c.state == "ended") {
    c.ended_reason = ended_reason_.value_or(c.limit ? "limit" : "exited");
  }
  return c;
}

asio::awaitable<Result<json::Value>> CodeContext::Run(ContextRunRequest request) {
  if (request.egress) {
    // The context's programs hold for its life and cannot be swapped per
    // run: a run may restate the policy, never ask for another.
    std::optional<EgressPolicy> own = exec_ ? exec_->Info().egress : std::nullopt;
    auto rules = [](const EgressPolicy& p) {
      EgressPolicy q = p;
      q.resolved.clear();
      return json::Serialize(EncodeEgressPolicy(q));
    };
    std::string asked = rules(*request.egress);
    if (!own || rules(*own) != asked) {
      std::string has = own ? rules(*own) : "none";
      co_return Status::InvalidRequest("this run asks for egress " + asked + " but context \"" +
                                       request_.id + "\" runs under egress " + has +
                                       "; a context's policy is set at its create")
          .With("field", std::string("egress"))
          .With("id", request_.id);
    }
  }
  std::string digest = Sha256Hex(request.code);
  if (request.run_id) {
    for (const std::shared_ptr<Pending>& p : replay_) {
      if (p->request.run_id != request.run_id) continue;
      if (p->digest != digest) {
        co_return Status::Error(
            ErrorCode::kRunIdConflict,
            "run_id \"" + *request.run_id + "\" was used for other code in this context")
            .With("run_id", *request.run_id);
      }
      std::shared_ptr<Pending> same = p;
      while (!same->done) co_await same->signal.Wait(SteadyClock::time_point::max());
      co_return same->answer;
    }
  }
  if (ended()) {
    NoteEnd("exited");
    co_return GoneError();
  }
  if (queue_.size() >= kContextQueue) {
    co_return Status::Error(ErrorCode::kContextBusy, "context \"" + request_.id + "\" has " +
                                                         std::to_string(queue_.size()) +
                                                         " runs waiting; retry once some answered")
        .With("id", request_.id)
        .With("limit", static_cast<int64_t>(kContextQueue));
  }
  auto pending = std::make_shared<Pending>();
  pending->request = std::move(request);
  pending->digest = std::move(digest);
  if (pending->request.run_id) {
    replay_.push_back(pending);
    if (replay_.size() > kReplayAnswers) replay_.erase(replay_.begin());
  }
  queue_.push_back(pending);
  if (!pumping_) {
    pumping_ = true;
    pumping_since_ = SteadyClock::now();
    asio::co_spawn(co_await asio::this_coro::executor, PumpOf(shared_from_this()), asio::detached);
  }
  while (!pending->done) co_await pending->signal.Wait(SteadyClock::time_point::max());
  co_return pending->answer;
}

asio::awaitable<void> CodeContext::PumpOf(std::shared_ptr<CodeContext> self) {
  co_await self->Pump();
}

asio::awaitable<void> CodeContext::Pump() {
  while (!queue_.empty()) {
    std::shared_ptr<Pending> p = queue_.front();
    queue_.pop_front();
    if (ended()) {
      NoteEnd("exited");
      p->answer = GoneError();
    } else {
      busy_ = true;
      WriteNote(p.get());
      RunResponse answer = co_await Execute(p->request);
      busy_ = false;
      ++runs_;
      p->answer = EncodeRunResponse(answer);
      p->done = true;  // its run_id in the note, as answered
      SaveNote();
    }
    p->done = true;
    p->signal.Notify();
  }
  pumping_ = false;
  engine_.NoteSettled();  // an upgrade waiting for this context looks again
}

std::optional<std::chrono::steady_clock::time_point> CodeContext::BusySince() const {
  if (!busy_ && !pumping_ && queue_.empty()) return std::nullopt;
  return pumping_since_;
}

asio::awaitable<bool> CodeContext::AwaitReply(const std::shared_ptr<Reply>& reply,
                                              SteadyClock::time_point deadline) {
  // A broken channel is most often an interpreter a limit just killed: its
  // exit, with the limit named, arrives from the engine in a moment.
  while (!reply->done && !exec_->finished() && SteadyClock::now() < deadline) {
    co_await exec_->WaitChange(deadline);
  }
  co_return reply->done;
}

asio::awaitable<std::pair<uint64_t, uint64_t>> CodeContext::PassTokens(
    const Reply& reply, SteadyClock::time_point until) {
  // The answer was written after the token: wait for the pumps to bring
  // each marked stream up to its token.
  ExecView exec = *exec_;
  const OutputLog& out = exec.log(Stream::kStdout);
  const OutputLog& err = exec.log(Stream::kStderr);
  uint64_t out_scan = out_at_;
  uint64_t err_scan = err_at_;
  std::optional<uint64_t> out_end;
  std::optional<uint64_t> err_end;
  while (true) {
    if (reply.out_marked && !out_end) out_end = FindCellToken(out, reply.token, &out_scan);
    if (reply.err_marked && !err_end) err_end = FindCellToken(err, reply.token, &err_scan);
    bool complete = (!reply.out_marked || out_end) && (!reply.err_marked || err_end);
    if (complete || exec.finished() || SteadyClock::now() >= until) break;
    co_await exec.WaitChange(until);
  }
  uint64_t out_to = out_end.value_or(out.next());
  uint64_t err_to = err_end.value_or(err.next());
  out_at_ = out_end ? *out_end + reply.token.size() : out_to;
  err_at_ = err_end ? *err_end + reply.token.size() : err_to;
  co_return std::make_pair(out_to, err_to);
}

asio::awaitable<RunResponse> CodeContext::Execute(const ContextRunRequest& request) {
  int64_t timeout = TimeoutOf(request);
  ExecView exec = *exec_;
  ChangeScan scan(blocking_, cwd_,
                  ChangeScanOptions{.enabled = request_.spec.scan_changes,
                                    .max_entries = options_.scan_max_entries,
                                    .max_ms = options_.scan_max_ms,
                                    .changed_files_max = options_.changed_files_max,
                                    .exclude = DirIdentity(engine_.state_dir())});
  co_await scan.Before();
  ArtifactScan artifacts(blocking_, cwd_, request.artifacts_dir);
  co_await artifacts.Before();
  // The context's earlier attempts (between runs, too) are not this run's.
  (void)engine_.TakeEgress(exec.id());
  auto reply = std::make_shared<Reply>();
  int64_t seq = ++seq_;
  reply->token = TokenFor(seq);
  std::string frame = Frame(seq, request.code, reply->token);
  auto t0 = SteadyClock::now();
  auto deadline = t0 + std::chrono::seconds(timeout);
  asio::co_spawn(co_await asio::this_coro::executor,
                 Converse(channel_, std::move(frame), reply, exec), asio::detached);
  bool answered = co_await AwaitReply(reply, deadline);
  while (answered && reply->seq >= 0 && reply->seq < seq) {
    // An earlier cell's answer: a resync's that a second crash left
    // unread (run/context_takeback.cc). Its output is no run's; read on.
    reply->token = TokenFor(reply->seq);
    co_await PassTokens(*reply, SteadyClock::now() + kTokenGrace);
    reply = std::make_shared<Reply>();
    reply->token = TokenFor(seq);
    asio::co_spawn(co_await asio::this_coro::executor, Converse(channel_, "", reply, exec),
                   asio::detached);
    answered = co_await AwaitReply(reply, deadline);
  }
  if (!answered && !exec.finished()) {
    // Past its deadline the cell cannot be stopped without its interpreter.
    engine_.Expire(exec, timeout);
    while (!exec.finished()) co_await exec.WaitChange(SteadyClock::time_point::max());
  }
  int64_t duration_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - t0).count();
  const OutputLog& out = exec.log(Stream::kStdout);
  const OutputLog& err = exec.log(Stream::kStderr);
  StreamWindow out_w{&out, out_at_, out.next()};
  StreamWindow err_w{&err, err_at_, err.next()};
  if (answered) {
    auto [out_to, err_to] =
        co_await PassTokens(*reply, std::max(deadline, SteadyClock::now()) + kTokenGrace);
    out_w.to = out_to;
    err_w.to = err_to;
  } else {
    out_w.to = out.next();
    err_w.to = err.next();
    out_at_ = out_w.to;
    err_at_ = err_w.to;
  }
  ExecInfo info = exec.Info();
  if (answered) {
    info.exit_code = reply->exit_code;
    info.signal.reset();
    info.timed_out = false;
    info.killed_by.reset();
    info.limit.reset();
    info.error.reset();
  } else {
    NoteEnd("exited");
    if (reply->failed && !info.killed_by && !info.exit_code && !info.signal) {
      info.error = "the context's interpreter stopped answering";
    }
  }
  info.duration_ms = duration_ms;
  info.limit_timeout_sec = timeout;
  // Every attempt the context's processes made while this run ran.
  std::optional<EgressReport> egress = engine_.TakeEgress(exec.id());
  TreeDiff diff = co_await scan.After();
  std::optional<ArtifactList> made = co_await artifacts.After();
  co_return BuildRunAnswer(AnswerParts{.info = std::move(info),
                                       .out = out_w,
                                       .err = err_w,
                                       .cwd = cwd_,
                                       .runtime = request_.spec.runtime,
                                       .result_marker = request_.spec.result_marker,
                                       .diff = std::move(diff),
                                       .exception = answered ? reply->exception : std::nullopt,
                                       .egress = std::move(egress),
                                       .artifacts = std::move(made)});
}

asio::awaitable<void> CodeContext::End(std::string reason) {
  NoteEnd(reason);
  if (channel_) {
    asio::error_code ignored;
    channel_->close(ignored);
  }
  if (!exec_) co_return;
  ExecView exec = *exec_;
  if (!exec.finished()) {
    KillRequest kill;
    kill.signal = "KILL";
    // Already over is as good as killed.
    (void)engine_.Kill(exec.id(), kill);
    while (!exec.finished()) co_await exec.WaitChange(SteadyClock::time_point::max());
  }
  // Runs still queued see the context ended; the one in progress built its
  // answer from the exec before this returns to the pump.
  while (busy_) co_await exec.WaitChange(SteadyClock::now() + std::chrono::milliseconds(50));
  engine_.Discard(exec);
}

asio::awaitable<void> CodeContext::Converse(std::shared_ptr<asio::posix::stream_descriptor> channel,
                                            std::string frame, std::shared_ptr<Reply> reply,
                                            ExecView exec) {
  auto fail = [&] {
    reply->failed = true;
    exec.change_signal().Notify();
  };
  auto [wec, wn] = co_await asio::async_write(*channel, asio::buffer(frame), kUseNothrow);
  if (wec) {
    fail();
    co_return;
  }
  unsigned char head[4];
  auto [hec, hn] = co_await asio::async_read(*channel, asio::buffer(head), kUseNothrow);
  if (hec) {
    fail();
    co_return;
  }
  uint32_t size = (uint32_t{head[0]} << 24) | (uint32_t{head[1]} << 16) | (uint32_t{head[2]} << 8) |
                  uint32_t{head[3]};
  if (size > kMaxReplyBytes) {
    fail();
    co_return;
  }
  std::string body(size, '\0');
  auto [bec, bn] = co_await asio::async_read(*channel, asio::buffer(body), kUseNothrow);
  if (bec) {
    fail();
    co_return;
  }
  Result<json::Value> doc = json::Parse(body);
  if (!doc.ok() || !doc->is_object()) {
    fail();
    co_return;
  }
  const json::Value* code = doc->Find("exit_code");
  if (!code || !code->is_int()) {
    fail();
    co_return;
  }
  reply->exit_code = code->as_int();
  if (const json::Value* seq = doc->Find("seq"); seq && seq->is_int()) reply->seq = seq->as_int();
  if (const json::Value* e = doc->Find("exception"); e && e->is_object()) {
    Result<RunException> decoded = DecodeRunException(*e);
    if (decoded.ok()) reply->exception = std::move(*decoded);
  }
  if (const json::Value* m = doc->Find("marked"); m && m->is_array() && m->as_array().size() == 2) {
    const json::Array& a = m->as_array();
    reply->out_marked = a[0].is_bool() && a[0].as_bool();
    reply->err_marked = a[1].is_bool() && a[1].as_bool();
  }
  reply->done = true;
  exec.change_signal().Notify();
}

}  // namespace agentd
