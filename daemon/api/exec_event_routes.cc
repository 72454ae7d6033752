// GET /v1/execs/{id}/events (docs/PROTOCOL.md, "Stream"): Server-Sent
// Events with both cursors in every id, explicit gaps, the exit event, and
// keep-alive comments; or the same events as binary frames ("Frames") when
// the client accepts them.
#include "agentd/protocol/exec.h"
#include "agentd/protocol/exec_frames.h"
#include "agentd/protocol/sse.h"
#include "api/exec_api.h"

namespace agentd {
namespace {

using Clock = ChangeSignal::Clock;

// The query's cursors, unless a reconnecting client's Last-Event-ID (which
// wins) says where it was; the query is checked either way.
Result<std::pair<uint64_t, uint64_t>> StartCursors(const Request& req) {
  QueryReader q(req.query());
  std::optional<uint64_t> out = q.Number("stdout_from", 0, INT64_MAX);
  std::optional<uint64_t> err = q.Number("stderr_from", 0, INT64_MAX);
  AGENTD_RETURN_IF_ERROR(q.Finish());
  if (const std::string* last = req.Header("last-event-id")) {
    std::optional<std::pair<uint64_t, uint64_t>> ids = ParseExecEventId(*last);
    if (!ids) {
      return Status::InvalidRequest("Last-Event-ID must be \"<stdout_next>:<stderr_next>\"")
          .With("field", "Last-Event-ID");
    }
    return *ids;
  }
  return std::pair<uint64_t, uint64_t>(out.value_or(0), err.value_or(0));
}

// Frames only when asked for by name: a client that does not know them
// (Accept absent, "*/*", "text/event-stream") keeps getting SSE.
bool AcceptsFrames(const Request& req) {
  const std::string* accept = req.Header("accept");
  return accept && accept->find(kExecFramesMediaType) != std::string::npos;
}

class EventWriter {
 public:
  EventWriter(const ExecView& exec, uint64_t out, uint64_t err, bool frames)
      : exec_(exec), cursor_{out, err}, frames_(frames) {}

  // Appends the next gap or data event of each stream; false when there
  // was nothing to send.
  Result<bool> Collect() {
    bool any = false;
    for (Stream s : {Stream::kStdout, Stream::kStderr}) {
      const OutputLog& log = exec_.log(s);
      uint64_t& cursor = cursor_[static_cast<int>(s)];
      auto stream_byte = static_cast<uint8_t>(s == Stream::kStdout ? 1 : 2);
      if (cursor < log.retained_from()) {
        uint64_t from = cursor;
        cursor = log.retained_from();
        if (frames_) {
          AppendExecGapFrame(buf_, stream_byte, from, cursor);
        } else {
          AppendSseEvent(buf_, "gap", GapEventData(StreamName(s), from, cursor), Id());
        }
        any = true;
      }
      if (cursor < log.next()) {
        AGENTD_RETURN_IF_ERROR(log.Read(cursor, kMaxEventBytes, &bytes_));
        any = true;
        if (frames_) {
          AppendExecFrameHeader(buf_, ExecFrameKind::kOutput, stream_byte,
                                static_cast<uint32_t>(bytes_.size()), cursor);
          buf_ += bytes_;
          cursor += bytes_.size();
          continue;
        }
        // Encoded straight into the send buffer: base64 and JSON hold no
        // line break.
        AppendSseEventStart(buf_, StreamName(s));
        AppendOutputEventData(buf_, cursor, bytes_);
        cursor += bytes_.size();
        AppendSseEventEnd(buf_, Id());
      }
    }
    return any;
  }
  void Exit() {
    std::string info = json::Serialize(EncodeExecInfo(exec_.Info()));
    if (!frames_) {
      AppendSseEvent(buf_, "exit", info, Id());
      return;
    }
    AppendExecFrameHeader(buf_, ExecFrameKind::kExit, 0, static_cast<uint32_t>(info.size()), 0);
    buf_ += info;
  }
  void Keepalive() {
    if (frames_) {
      AppendExecFrameHeader(buf_, ExecFrameKind::kKeepalive, 0, 0, 0);
    } else {
      AppendSseComment(buf_, "keepalive");
    }
  }
  std::string& buffer() { return buf_; }

 private:
  std::string Id() const { return FormatExecEventId(cursor_[0], cursor_[1]); }

  const ExecView& exec_;
  uint64_t cursor_[2];
  bool frames_;
  std::string buf_, bytes_;
};

asio::awaitable<void> RunStream(const ExecView& exec, EventWriter& w, Request& req, Response& res) {
  auto last_write = Clock::now();
  for (;;) {
    Result<bool> collected = w.Collect();
    if (!collected.ok()) co_return;  // cut: the client resumes from its last id
    bool done = !*collected && exec.ended();
    if (done) w.Exit();
    if (!*collected && !done && Clock::now() - last_write >= kKeepaliveInterval) w.Keepalive();
    if (!w.buffer().empty()) {
      Status wrote = co_await res.Write(w.buffer());
      if (!wrote.ok()) co_return;
      w.buffer().clear();
      last_write = Clock::now();
    }
    if (done) {
      co_await res.End();
      co_return;
    }
    if (*collected) continue;
    if (req.PeerClosed()) co_return;
    co_await exec.WaitChange(last_write + kKeepaliveInterval);
  }
}

asio::awaitable<void> Events(ExecEngine& engine, Request& req, Response& res) {
  Result<std::pair<uint64_t, uint64_t>> cursors = StartCursors(req);
  if (!cursors.ok()) {
    co_await res.SendError(cursors.status());
    co_return;
  }
  Result<ExecView> found = engine.Find(req.Param("id"));
  if (!found.ok()) {
    co_await res.SendError(found.status());
    co_return;
  }
  const ExecView& exec = *found;
  Status ok = CheckCursor("stdout_from", cursors->first, exec.log(Stream::kStdout));
  if (ok.ok()) ok = CheckCursor("stderr_from", cursors->second, exec.log(Stream::kStderr));
  if (!ok.ok()) {
    co_await res.SendError(ok);
    co_return;
  }
  bool frames = AcceptsFrames(req);
  Headers headers{{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
  Status began = co_await res.Begin(200, frames ? kExecFramesMediaType : "text/event-stream",
                                    std::nullopt, headers);
  if (!began.ok()) co_return;
  if (req.method() == "HEAD") {
    co_await res.End();
    co_return;
  }
  EventWriter writer(exec, cursors->first, cursors->second, frames);
  co_await RunStream(exec, writer, req, res);
}

}  // namespace

void RegisterExecEventRoutes(Router& router, ExecEngine& engine) {
  router.Add("GET", "/v1/execs/{id}/events",
             [&engine](Request& req, Response& res) { return Events(engine, req, res); });
}

}  // namespace agentd
