// GET /v1/execs/{id}/stdout and .../stderr (docs/PROTOCOL.md, "Raw
// bytes"): the spool file straight to the socket with sendfile; a
// follower that has caught up gets new bytes from its tap, the pump's
// tee of the child's pipe (spool/output_log.h), without reading the file,
// batched for a fast producer (OutputLog::Tap::HoldUntil).
#include "api/exec_api.h"

namespace agentd {
namespace {

// One sendfile call's worth; the pin moves between calls.
constexpr uint64_t kSendBytes = 4 << 20;

// Streams [cursor, next) and waits for more until the exec finished.
// When retention releases bytes this follower has not received, the
// response ends without its final chunk (the client sees a cut stream; a
// reconnect from its offset reports the loss in Agentd-From).
asio::awaitable<void> Follow(const ExecView& exec, Stream stream, uint64_t cursor, Request& req,
                             Response& res) {
  const OutputLog& log = exec.log(stream);
  OutputLog::Pin pin = exec.Pin(stream, cursor);
  OutputLog::Tap tap = exec.Tap(stream, cursor);
  auto last_check = ChangeSignal::Clock::now();
  std::optional<ChangeSignal::Clock::time_point> hold;  // a fast producer's batch
  for (;;) {
    if (cursor < log.retained_from()) {  // lost: cut the stream after whole chunks
      (void)co_await res.Flush();
      co_return;
    }
    if (!tap.empty()) {  // it holds [cursor, tap.end())
      uint64_t len = tap.end() - cursor;
      bool growing = tap.end() == log.next() && !exec.ended();
      hold = OutputLog::Tap::HoldUntil(len, tap.batch(), growing, hold, ChangeSignal::Clock::now());
      if (hold) {  // each pump turn wakes it; the deadline ends the hold
        co_await exec.WaitChange(*hold);
        continue;
      }
      pin.Move(cursor);
      Status sent = co_await res.WriteFromPipe(tap.fd(), len);
      if (!sent.ok()) co_return;
      tap.Took(len);
      cursor += len;
      continue;
    }
    if (cursor < log.next()) {
      uint64_t len = std::min(log.next() - cursor, kSendBytes);
      pin.Move(cursor);
      Status sent = co_await res.WriteFromFile(log.fd(), cursor, len);
      if (!sent.ok()) co_return;
      cursor += len;
      continue;
    }
    if (exec.ended()) {
      co_await res.End();
      co_return;
    }
    tap.Restart(cursor);  // caught up: the pump's next bytes are teed
    if (res.flush_owed()) {
      // The flush can wait for room in the socket, and output or the end
      // that arrives meanwhile notifies no one: look again before sleeping.
      if (Status flushed = co_await res.Flush(); !flushed.ok()) co_return;
      continue;
    }
    auto now = ChangeSignal::Clock::now();
    if (now - last_check >= kKeepaliveInterval) {
      if (req.PeerClosed()) co_return;
      last_check = now;
    }
    co_await exec.WaitChange(now + kKeepaliveInterval);
  }
}

asio::awaitable<void> Output(ExecEngine& engine, Stream stream, Request& req, Response& res) {
  QueryReader q(req.query());
  std::optional<uint64_t> from = q.Number("from", 0, INT64_MAX);
  bool follow = q.Bool("follow", false);
  if (Status s = q.Finish(); !s.ok()) {
    co_await res.SendError(s);
    co_return;
  }
  Result<ExecView> found = engine.Find(req.Param("id"));
  if (!found.ok()) {
    co_await res.SendError(found.status());
    co_return;
  }
  const ExecView& exec = *found;
  const OutputLog& log = exec.log(stream);
  uint64_t cursor = from.value_or(0);
  if (Status ok = CheckCursor("from", cursor, log); !ok.ok()) {
    co_await res.SendError(ok);
    co_return;
  }
  cursor = std::max(cursor, log.retained_from());
  Headers headers{{"Agentd-From", std::to_string(cursor)}};
  if (!follow) {
    uint64_t next = log.next();
    headers.emplace_back("Agentd-Next", std::to_string(next));
    OutputLog::Pin pin = exec.Pin(stream, cursor);
    Status began = co_await res.Begin(200, "application/octet-stream", next - cursor, headers);
    if (!began.ok()) co_return;
    Status sent = co_await res.WriteFromFile(log.fd(), cursor, next - cursor);
    if (!sent.ok()) co_return;
    co_await res.End();
    co_return;
  }
  headers.emplace_back("Cache-Control", "no-cache");
  Status began = co_await res.Begin(200, "application/octet-stream", std::nullopt, headers);
  if (!began.ok()) co_return;
  if (req.method() == "HEAD") {
    co_await res.End();
    co_return;
  }
  co_await Follow(exec, stream, cursor, req, res);
}

}  // namespace

void RegisterExecOutputRoutes(Router& router, ExecEngine& engine) {
  router.Add("GET", "/v1/execs/{id}/stdout", [&engine](Request& req, Response& res) {
    return Output(engine, Stream::kStdout, req, res);
  });
  router.Add("GET", "/v1/execs/{id}/stderr", [&engine](Request& req, Response& res) {
    return Output(engine, Stream::kStderr, req, res);
  });
}

}  // namespace agentd
