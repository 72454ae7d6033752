#include "api/exec_match_wait.h"

#include <algorithm>

#include "agentd/protocol/exec.h"
#include "api/exec_api.h"
#include "api/wait_slot.h"
#include "search/output_matcher.h"

namespace agentd {
namespace {

// The log is read into the matcher in pieces of this size.
constexpr uint64_t kMatchReadBytes = 256 * 1024;

struct Feeding {
  OutputMatcher::Outcome outcome;
  bool fed_end = false;  // the stream's end was given to the matcher
};

// Gives the matcher every byte the log holds past what it has seen (from
// the log's front when retention dropped some), up to the scan bound.
// `ended`: the exec is over, nothing more will be written.
Status FeedAvailable(OutputMatcher& m, const OutputLog& log, bool ended, Feeding& f) {
  while (f.outcome.kind == OutputMatcher::Outcome::kNeedMore && !f.fed_end &&
         m.scanned() < kMatchScanBytes) {
    uint64_t at = std::max(m.fed_to(), log.retained_from());
    std::string chunk;
    if (at < log.next()) AGENTD_RETURN_IF_ERROR(log.Read(at, kMatchReadBytes, &chunk));
    bool last = ended && at + chunk.size() >= log.next();
    if (chunk.empty() && !last) break;
    Result<OutputMatcher::Outcome> out = m.Feed(at, chunk, last);
    if (!out.ok()) return out.status();
    f.outcome = std::move(*out);
    f.fed_end = last;
  }
  return Status::Ok();
}

}  // namespace

asio::awaitable<void> AnswerMatchPoll(ApiContext& ctx, Request& req, ExecView exec,
                                      const PollQuery& q, Response& res) {
  const MatchQuery& mq = *q.match;
  const OutputLog& log = exec.log(mq.stream);
  Status ok = CheckPollCursors(exec, q);
  if (ok.ok()) ok = CheckCursor("cursor", mq.cursor, log);
  Result<std::shared_ptr<const LineMatcher>> matcher =
      LineMatcher::Compile(mq.pattern, {.partial = true});
  if (ok.ok()) ok = matcher.status();
  Result<std::optional<WaitSlot>> slot = WaitSlot::Take(ctx);
  if (ok.ok()) ok = slot.status();
  if (!ok.ok()) {
    co_await res.SendError(ok);
    co_return;
  }

  OutputMatch answer;
  answer.stream = mq.stream == Stream::kStdout ? "stdout" : "stderr";
  uint64_t start = std::max(mq.cursor, log.retained_from());
  if (mq.cursor < start) {
    answer.gap_from = mq.cursor;
    answer.gap_to = start;
  }
  OutputMatcher m(*matcher, start, kMatchWindowBytes);
  Feeding f;
  auto deadline = ChangeSignal::Clock::now() + std::chrono::milliseconds(q.wait_ms);
  bool watch_client = true;
  for (;;) {
    bool ended = exec.ended();
    Status fed = FeedAvailable(m, log, ended, f);
    if (!fed.ok()) {
      co_await res.SendError(fed);
      co_return;
    }
    answer.next = m.resume_from();
    if (f.outcome.kind == OutputMatcher::Outcome::kMatched) {
      answer.matched = true;
      answer.offset = f.outcome.match_from;
      answer.end = f.outcome.match_to;
      answer.text = std::move(f.outcome.text);
      answer.next = answer.end;
      break;
    }
    if (f.outcome.kind == OutputMatcher::Outcome::kWindowFull) {
      // The begun match is given up; the next one may start a byte later.
      answer.reason = "window_limit";
      answer.next = m.resume_from() + 1;
      break;
    }
    if (m.scanned() >= kMatchScanBytes) {
      answer.reason = "scan_limit";
      break;
    }
    if (f.fed_end) {
      answer.reason = "exited";
      break;
    }
    if (ChangeSignal::Clock::now() >= deadline) {
      answer.reason = "timeout";
      break;
    }
    if (req.PeerClosed()) co_return;
    co_await SleepOrPeer(req, exec.change_signal(), deadline, watch_client);
    if (req.PeerClosed()) co_return;
  }
  Result<ExecPollResponse> body = PollSnapshot(exec, q);
  if (!body.ok()) {
    co_await res.SendError(body.status());
    co_return;
  }
  body->match = std::move(answer);
  co_await res.SendJson(200, EncodeExecPollResponse(*body));
}

}  // namespace agentd
