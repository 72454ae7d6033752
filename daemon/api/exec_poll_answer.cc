#include "api/exec_poll_answer.h"

#include "agentd/protocol/exec.h"
#include "api/exec_api.h"

namespace agentd {
namespace {

// Something a long poll answers for: new bytes (or a gap) past a cursor it
// was given (unless it waits for the exit only), or the exec's end.
bool HasNews(const ExecView& exec, const PollQuery& q) {
  if (exec.ended()) return true;
  if (q.until_exit) return false;
  for (Stream s : {Stream::kStdout, Stream::kStderr}) {
    const std::optional<uint64_t>& c = q.cursors[static_cast<int>(s)];
    if (c && *c < exec.log(s).next()) return true;
  }
  return false;
}

}  // namespace

Result<ExecPollResponse> PollSnapshot(const ExecView& exec, const PollQuery& q) {
  ExecPollResponse r;
  r.exec = exec.Info();
  for (Stream s : {Stream::kStdout, Stream::kStderr}) {
    const std::optional<uint64_t>& cursor = q.cursors[static_cast<int>(s)];
    if (!cursor) continue;
    const OutputLog& log = exec.log(s);
    OutputSlice slice;
    slice.from = std::max(*cursor, log.retained_from());
    if (*cursor < slice.from) slice.gap_from = *cursor;
    AGENTD_RETURN_IF_ERROR(log.Read(slice.from, q.max_bytes, &slice.data));
    slice.next = slice.from + slice.data.size();
    (s == Stream::kStdout ? r.stdout_slice : r.stderr_slice) = std::move(slice);
  }
  return r;
}

Status CheckPollCursors(const ExecView& exec, const PollQuery& q) {
  for (Stream s : {Stream::kStdout, Stream::kStderr}) {
    if (const auto& c = q.cursors[static_cast<int>(s)]) {
      Status ok =
          CheckCursor(s == Stream::kStdout ? "stdout_from" : "stderr_from", *c, exec.log(s));
      if (!ok.ok()) return ok;
    }
  }
  return Status::Ok();
}

PollQuery ReadPollQuery(QueryReader& q, bool allow_match) {
  PollQuery p;
  p.cursors[0] = q.Number("stdout_from", 0, INT64_MAX);
  p.cursors[1] = q.Number("stderr_from", 0, INT64_MAX);
  std::optional<uint64_t> max = q.Number("max_bytes", 1, kMaxPollMaxBytes);
  p.max_bytes = max.value_or(kDefaultPollMaxBytes);
  std::optional<uint64_t> wait = q.Number("wait_ms", 0, kMaxWaitMs);
  p.wait_ms = wait.value_or(0);
  std::optional<std::string> until = allow_match ? q.Choice("until", {"output", "exit", "match"})
                                                 : q.Choice("until", {"output", "exit"});
  p.until_exit = until == "exit";
  if (until == "match") {
    MatchQuery m;
    if (const std::string* pattern = q.Required("pattern")) m.pattern = *pattern;
    m.stream =
        q.Choice("stream", {"stdout", "stderr"}) == "stderr" ? Stream::kStderr : Stream::kStdout;
    m.cursor = q.Number("cursor", 0, INT64_MAX).value_or(0);
    p.match = std::move(m);
  } else if (allow_match) {
    // Named, rather than refused as unknown, so the fix is plain.
    for (std::string_view name : {"pattern", "stream", "cursor"}) {
      if (q.String(name)) {
        q.Fail(Status::InvalidRequest("query parameter \"" + std::string(name) +
                                      "\" needs until=match")
                   .With("field", std::string(name)));
      }
    }
  }
  p.given = p.cursors[0] || p.cursors[1] || max || wait || until;
  return p;
}

asio::awaitable<void> AnswerPoll(const ExecView& exec, const PollQuery& q, int status,
                                 Response& res) {
  if (Status ok = CheckPollCursors(exec, q); !ok.ok()) {
    co_await res.SendError(ok);
    co_return;
  }
  auto deadline = ChangeSignal::Clock::now() + std::chrono::milliseconds(q.wait_ms);
  while (!HasNews(exec, q) && ChangeSignal::Clock::now() < deadline) {
    co_await exec.WaitChange(deadline);
  }
  Result<ExecPollResponse> answer = PollSnapshot(exec, q);
  if (!answer.ok()) {
    co_await res.SendError(answer.status());
    co_return;
  }
  co_await res.SendJson(status, EncodeExecPollResponse(*answer));
}

}  // namespace agentd
