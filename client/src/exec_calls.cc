#include "exec_calls.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <random>
#include <tuple>

#include "agentd/client/nothrow.h"
#include "agentd/protocol/base64.h"
#include "agentd/protocol/exec_frames.h"
#include "agentd/protocol/percent.h"
#include "agentd/protocol/sse.h"

namespace agentd::client {
namespace {

// The daemon sends a keepalive at least every 15 s; a stream silent for
// much longer than that is dead even if the socket does not say so.
constexpr std::chrono::seconds kStreamSilenceLimit{45};
// One long-poll round of WaitExec.
constexpr std::chrono::milliseconds kWaitRound{30000};
// Long polls Run makes before it follows the output as an event stream.
constexpr int kRunPollRounds = 3;

std::string ExecPath(const std::string& id) {
  return "/v1/execs/" + PercentEncode(id, /*keep_slash=*/true);
}

HttpRequest JsonRequest(std::string method, std::string target, const json::Value& body) {
  HttpRequest req;
  req.method = std::move(method);
  req.target = std::move(target);
  req.body = json::Serialize(body);
  req.content_type = "application/json";
  return req;
}

Result<uint64_t> U64(const json::Value& doc, std::string_view key) {
  const json::Value* v = doc.Find(key);
  if (!v || !v->is_int() || v->as_int() < 0) {
    return Status::Error(ErrorCode::kProtocolError,
                         "event lacks a valid \"" + std::string(key) + "\"");
  }
  return static_cast<uint64_t>(v->as_int());
}

}  // namespace

std::string MintExecId(std::string_view prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count();
  // "-" 11 hex digits of the time "-" 16 of randomness, zero-padded (no
  // snprintf: a Run mints one id, and the format parser cost more than it).
  std::string id(prefix.substr(0, kMaxExecIdBytes - 30));
  size_t at = id.size();
  id.resize(at + 29, '0');
  auto hex = [&](uint64_t v, size_t digits, size_t where) {
    id[where] = '-';
    for (size_t i = where + digits; i > where; --i, v >>= 4) id[i] = "0123456789abcdef"[v & 15];
  };
  hex(static_cast<uint64_t>(ms), 11, at);
  hex(rng(), 16, at + 12);
  return id;
}

asio::awaitable<Result<ExecInfo>> StartExecCall(Transport& t, std::string id,
                                                ExecStartRequest request) {
  AGENTD_CO_RETURN_IF_ERROR(ValidateExecId(id));
  HttpRequest req = JsonRequest("PUT", ExecPath(id), EncodeExecStartRequest(request));
  // Safe to retry: the same id and body answer the same exec, never a second one.
  req.idempotent = true;
  co_return DecodeAnswer<ExecInfo>(co_await t.Call(req), &DecodeExecInfo);
}

namespace {

// Poll's query (docs/PROTOCOL.md, "Poll"), appended to `target`.
void AppendPollQuery(std::string& target, const PollOptions& options) {
  char sep = target.find('?') == std::string::npos ? '?' : '&';
  auto add = [&](std::string_view name, std::string_view value) {
    target += sep;
    target += name;
    target += '=';
    target += value;
    sep = '&';
  };
  if (options.stdout_from) add("stdout_from", std::to_string(*options.stdout_from));
  if (options.stderr_from) add("stderr_from", std::to_string(*options.stderr_from));
  if (options.max_bytes) add("max_bytes", std::to_string(*options.max_bytes));
  if (options.wait.count() > 0) add("wait_ms", std::to_string(options.wait.count()));
  if (options.until_exit) add("until", "exit");
}

}  // namespace

asio::awaitable<Result<ExecPollResponse>> PollExecCall(Transport& t, std::string id,
                                                       PollOptions options) {
  AGENTD_CO_RETURN_IF_ERROR(ValidateExecId(id));
  HttpRequest req;
  req.target = ExecPath(id);
  AppendPollQuery(req.target, options);
  req.idempotent = true;  // polling never changes state
  req.extra_wait = options.wait;
  co_return DecodeAnswer<ExecPollResponse>(co_await t.Call(req), &DecodeExecPollResponse);
}

asio::awaitable<Result<ExecPollResponse>> StartAndPollCall(Transport& t, std::string id,
                                                           ExecStartRequest request,
                                                           PollOptions options) {
  AGENTD_CO_RETURN_IF_ERROR(ValidateExecId(id));
  HttpRequest req = JsonRequest("PUT", ExecPath(id), EncodeExecStartRequest(request));
  AppendPollQuery(req.target, options);
  req.idempotent = true;  // the query is not part of the start's identity
  req.extra_wait = options.wait;
  co_return DecodeAnswer<ExecPollResponse>(co_await t.Call(req), &DecodeExecPollResponse);
}

asio::awaitable<Result<ExecInfo>> WaitExecCall(Transport& t, std::string id,
                                               std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    PollOptions o;
    o.wait = std::clamp(left, std::chrono::milliseconds(0), kWaitRound);
    Result<ExecPollResponse> r = co_await PollExecCall(t, id, o);
    if (!r.ok()) co_return r.status();
    if (!r->exec.running) co_return r->exec;
    if (Clock::now() >= deadline) {
      co_return Status::Error(
          ErrorCode::kDeadlineExceeded,
          "exec " + id + " still running after " + std::to_string(timeout.count()) + " ms")
          .With("id", id);
    }
  }
}

asio::awaitable<Result<ExecPollResponse>> WaitForOutputCall(Transport& t, std::string id,
                                                            std::string pattern,
                                                            WaitForOutputOptions options) {
  AGENTD_CO_RETURN_IF_ERROR(ValidateExecId(id));
  auto start = Clock::now();
  uint64_t cursor = options.cursor;
  for (;;) {
    std::chrono::milliseconds wait = kWaitRound;
    if (options.timeout) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(start + *options.timeout -
                                                                        Clock::now());
      wait = std::clamp(left, std::chrono::milliseconds(0), kWaitRound);
    }
    HttpRequest req;
    req.target = ExecPath(id) + "?until=match&pattern=" + PercentEncode(pattern, false) +
                 "&stream=" + PercentEncode(options.stream, false) +
                 "&cursor=" + std::to_string(cursor) + "&wait_ms=" + std::to_string(wait.count());
    req.idempotent = true;  // read-only like every poll
    req.extra_wait = wait;
    Result<ExecPollResponse> r =
        DecodeAnswer<ExecPollResponse>(co_await t.Call(req), &DecodeExecPollResponse);
    if (!r.ok()) co_return r.status();
    if (!r->match) {
      co_return Status::Error(ErrorCode::kProtocolError, "the answer lacks \"match\"");
    }
    const OutputMatch& m = *r->match;
    if (m.matched || m.reason == "exited") co_return r;
    // A round's timeout or a scan bound: resume where nothing is lost.
    cursor = m.next;
    bool over = options.timeout && Clock::now() >= start + *options.timeout;
    if (m.reason == "timeout" && over) co_return r;
  }
}

asio::awaitable<Result<ExecInfo>> KillExecCall(Transport& t, std::string id, KillRequest request) {
  AGENTD_CO_RETURN_IF_ERROR(ValidateExecId(id));
  HttpRequest req = JsonRequest("POST", ExecPath(id) + "/kill", EncodeKillRequest(request));
  req.idempotent = true;
  co_return DecodeAnswer<ExecInfo>(co_await t.Call(req), &DecodeExecInfo);
}

asio::awaitable<Result<ExecInfo>> ResizeExecCall(Transport& t, std::string id, int rows, int cols) {
  AGENTD_CO_RETURN_IF_ERROR(ValidateExecId(id));
  HttpRequest req =
      JsonRequest("POST", ExecPath(id) + "/resize", EncodeResizeRequest(ResizeRequest{rows, cols}));
  req.idempotent = true;  // the same size twice is the same terminal
  co_return DecodeAnswer<ExecInfo>(co_await t.Call(req), &DecodeExecInfo);
}

asio::awaitable<Result<ExecInfo>> AckExecCall(Transport& t, std::string id) {
  AGENTD_CO_RETURN_IF_ERROR(ValidateExecId(id));
  HttpRequest req = JsonRequest("POST", ExecPath(id) + "/ack", json::Object());
  req.idempotent = true;
  co_return DecodeAnswer<ExecInfo>(co_await t.Call(req), &DecodeExecInfo);
}

asio::awaitable<Result<EgressReport>> ExecEgressCall(Transport& t, std::string id) {
  AGENTD_CO_RETURN_IF_ERROR(ValidateExecId(id));
  HttpRequest req;
  req.target = ExecPath(id) + "/egress";
  req.idempotent = true;
  co_return DecodeAnswer<EgressReport>(co_await t.Call(req), &DecodeEgressReport);
}

asio::awaitable<Result<std::vector<ExecInfo>>> ListExecsCall(Transport& t) {
  HttpRequest req;
  req.target = "/v1/execs";
  req.idempotent = true;
  co_return DecodeAnswer<std::vector<ExecInfo>>(co_await t.Call(req), &DecodeExecList);
}

asio::awaitable<Result<uint64_t>> WriteStdinCall(Transport& t, std::string id, uint64_t offset,
                                                 std::string bytes, bool eof) {
  AGENTD_CO_RETURN_IF_ERROR(ValidateExecId(id));
  HttpRequest req;
  req.method = "POST";
  req.target = ExecPath(id) + "/stdin?offset=" + std::to_string(offset) + (eof ? "&eof=1" : "");
  req.body = std::move(bytes);
  req.content_type = "application/octet-stream";
  // Safe to retry: bytes before the daemon's offset are skipped.
  req.idempotent = true;
  Result<StdinResponse> r = DecodeAnswer<StdinResponse>(co_await t.Call(req), &DecodeStdinResponse);
  if (!r.ok()) co_return r.status();
  co_return r->next;
}

namespace {

// Applies a stream's events to the reader's cursors and callbacks, whichever
// form (SSE or frames) carried them: each byte goes out exactly once.
struct StreamApplier {
  StreamCursors& cursors;
  StreamCallbacks& cb;

  void Output(bool is_out, uint64_t offset, std::string_view bytes) {
    uint64_t& next = is_out ? cursors.stdout_next : cursors.stderr_next;
    // Deliver only bytes past the cursor: exactly once, whatever the daemon repeats.
    uint64_t end = offset + bytes.size();
    if (end > next && offset <= next) {
      auto& sink = is_out ? cb.on_stdout : cb.on_stderr;
      if (sink) sink(next, bytes.substr(next - offset));
      next = end;
    }
  }
  void Gap(bool is_out, uint64_t from, uint64_t to) {
    uint64_t& next = is_out ? cursors.stdout_next : cursors.stderr_next;
    if (to > next) {
      if (cb.on_gap) cb.on_gap(is_out ? "stdout" : "stderr", std::max(next, from), to);
      next = to;
    }
  }
};

// One SSE event; sets `exit_info` on the exit event.
Status ApplySseEvent(StreamApplier& apply, const SseEvent& ev, std::optional<ExecInfo>& exit_info) {
  Result<json::Value> doc = json::Parse(ev.data);
  if (!doc.ok()) return Status::Error(ErrorCode::kProtocolError, "bad event data");
  if (ev.event == "stdout" || ev.event == "stderr") {
    Result<uint64_t> offset = U64(*doc, "offset");
    const json::Value* data = doc->Find("data_b64");
    std::optional<std::string> bytes =
        data && data->is_string() ? Base64Decode(data->as_string()) : std::nullopt;
    if (!offset.ok() || !bytes) return Status::Error(ErrorCode::kProtocolError, "bad output event");
    apply.Output(ev.event == "stdout", *offset, *bytes);
  } else if (ev.event == "gap") {
    const json::Value* s = doc->Find("stream");
    Result<uint64_t> from = U64(*doc, "from");
    Result<uint64_t> to = U64(*doc, "to");
    if (!s || !s->is_string() || !from.ok() || !to.ok()) {
      return Status::Error(ErrorCode::kProtocolError, "bad gap event");
    }
    apply.Gap(s->as_string() != "stderr", *from, *to);
  } else if (ev.event == "exit") {
    Result<ExecInfo> info = DecodeExecInfo(*doc);
    if (!info.ok()) return info.status();
    exit_info = std::move(*info);
  }
  // The id is the authoritative position after the event.
  if (auto pos = ParseExecEventId(ev.id)) {
    apply.cursors.stdout_next = std::max(apply.cursors.stdout_next, pos->first);
    apply.cursors.stderr_next = std::max(apply.cursors.stderr_next, pos->second);
  }
  return Status::Ok();
}

// One frame (docs/PROTOCOL.md, "Frames"); false for a keepalive or a kind
// this client does not know (nothing delivered).
Result<bool> ApplyExecFrame(StreamApplier& apply, const ExecFrame& f,
                            std::optional<ExecInfo>& exit_info) {
  switch (static_cast<ExecFrameKind>(f.kind)) {
    case ExecFrameKind::kOutput:
    case ExecFrameKind::kGap:
      if (f.stream != 1 && f.stream != 2) {
        return Status::Error(ErrorCode::kProtocolError, "bad frame stream")
            .With("stream", f.stream);
      }
      if (f.kind == static_cast<uint8_t>(ExecFrameKind::kOutput)) {
        apply.Output(f.stream == 1, f.offset, f.payload);
      } else {
        uint64_t to = 0;
        for (char c : f.payload) to = (to << 8) | static_cast<unsigned char>(c);
        apply.Gap(f.stream == 1, f.offset, to);
      }
      return true;
    case ExecFrameKind::kExit: {
      Result<json::Value> doc = json::Parse(f.payload);
      if (!doc.ok()) return Status::Error(ErrorCode::kProtocolError, "bad exit frame");
      Result<ExecInfo> info = DecodeExecInfo(*doc);
      if (!info.ok()) return info.status();
      exit_info = std::move(*info);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

asio::awaitable<Result<ExecInfo>> StreamExecCall(Transport& t, std::string id,
                                                 StreamCursors cursors, StreamCallbacks cb) {
  AGENTD_CO_RETURN_IF_ERROR(ValidateExecId(id));
  int quiet_failures = 0;  // reconnects in a row that delivered nothing
  StreamApplier apply{cursors, cb};
  for (int attempt = 0;; ++attempt) {
    HttpRequest req;
    req.target = ExecPath(id) + "/events";
    // Frames when the daemon offers them; an older one answers SSE.
    req.headers.emplace_back("Accept", std::string(kExecFramesMediaType) + ", text/event-stream");
    req.headers.emplace_back("Last-Event-ID",
                             FormatExecEventId(cursors.stdout_next, cursors.stderr_next));
    req.idempotent = true;
    Status failure;
    bool delivered = false;
    std::optional<ExecInfo> exit_info;
    Result<std::unique_ptr<ResponseStream>> stream = co_await t.Open(req);
    if (!stream.ok()) {
      failure = stream.status();
      if (!IsRetryableFailure(failure)) co_return failure;
    } else {
      const std::string* type = (*stream)->head().Header("content-type");
      bool frames = type && type->starts_with(kExecFramesMediaType);
      Status event_error;
      SseDecoder decoder([&](SseEvent&& ev) {
        if (!event_error.ok() || exit_info) return;
        event_error = ApplySseEvent(apply, ev, exit_info);
        delivered = true;
        if (cb.on_cursors) cb.on_cursors(cursors);
      });
      ExecFrameDecoder frame_decoder;
      auto on_frame = [&](const ExecFrame& f) {
        if (!event_error.ok() || exit_info) return;
        Result<bool> applied = ApplyExecFrame(apply, f, exit_info);
        if (!applied.ok()) {
          event_error = applied.status();
        } else if (*applied) {
          delivered = true;
          if (cb.on_cursors) cb.on_cursors(cursors);
        }
      };
      for (;;) {
        Result<std::string_view> chunk =
            co_await (*stream)->Read(Clock::now() + kStreamSilenceLimit);
        if (!chunk.ok()) {
          failure = chunk.status();
          break;
        }
        if (chunk->empty()) {
          failure =
              Status::Error(ErrorCode::kTransport, "event stream ended before the exit event");
          break;
        }
        if (frames) {
          Status fed = frame_decoder.Feed(*chunk, on_frame);
          if (!fed.ok()) co_return fed;
        } else if (!decoder.Feed(*chunk)) {
          co_return Status::Error(ErrorCode::kProtocolError, "event stream line too long");
        }
        if (!event_error.ok()) co_return event_error;
        if (exit_info) {
          (*stream)->connection().Close();  // the daemon closes it too; do not reuse
          co_return std::move(*exit_info);
        }
      }
    }
    quiet_failures = delivered ? 0 : quiet_failures + 1;
    if (quiet_failures > t.options().max_stream_reconnects) {
      co_return failure.With("reconnects", quiet_failures - 1);
    }
    if (cb.on_reconnect) cb.on_reconnect(attempt + 1, failure);
    asio::steady_timer pause(t.executor(), t.Backoff(std::max(quiet_failures, 1)));
    co_await pause.async_wait(kNothrow);
  }
}

namespace {

// An offset header of the raw output route (Agentd-From, Agentd-Next).
std::optional<uint64_t> OffsetHeader(const HttpResponse& r, std::string_view lower_name) {
  const std::string* v = r.Header(lower_name);
  if (!v || v->empty() || v->size() > 19) return std::nullopt;
  uint64_t out = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || end != v->data() + v->size()) return std::nullopt;
  return out;
}

}  // namespace

asio::awaitable<Result<OutputChunk>> ReadOutputCall(Transport& t, std::string id,
                                                    std::string stream, uint64_t start,
                                                    size_t max_bytes) {
  AGENTD_CO_RETURN_IF_ERROR(ValidateExecId(id));
  if (stream != "stdout" && stream != "stderr") {
    co_return Status::InvalidRequest("stream must be \"stdout\" or \"stderr\"")
        .With("field", "stream");
  }
  HttpRequest req;
  req.target = ExecPath(id) + "/" + stream + "?from=" + std::to_string(start);
  req.idempotent = true;
  Result<HttpResponse> r = co_await t.Call(req, max_bytes);
  if (!r.ok()) co_return r.status();
  std::optional<uint64_t> first = OffsetHeader(*r, "agentd-from");
  std::optional<uint64_t> next = OffsetHeader(*r, "agentd-next");
  // The daemon names both offsets and sends exactly the bytes in between;
  // anything else would hand the caller cursors that skip or repeat bytes.
  if (!first || !next || *first < start || *next < *first || *next - *first != r->body.size()) {
    co_return Status::Error(ErrorCode::kProtocolError,
                            "the output answer's Agentd-From/Agentd-Next do not frame its " +
                                std::to_string(r->body.size()) + " bytes");
  }
  OutputChunk out{*first, *next, std::move(r->body), std::nullopt};
  if (*first > start) out.gap = std::make_pair(start, *first);
  co_return out;
}

asio::awaitable<Result<RunResult>> RunCall(Transport& t, ExecStartRequest request,
                                           RunOptions options) {
  RunResult result;
  result.id = options.id.empty() ? MintExecId("run") : options.id;
  StreamCallbacks cb;
  auto keep = [](std::string& into, bool& truncated, size_t limit, std::string_view bytes) {
    size_t room = limit > into.size() ? limit - into.size() : 0;
    if (bytes.size() > room) truncated = true;
    into.append(bytes.substr(0, room));
  };
  cb.on_stdout = [&](uint64_t, std::string_view b) {
    keep(result.stdout_data, result.stdout_truncated, options.max_stdout_bytes, b);
  };
  cb.on_stderr = [&](uint64_t, std::string_view b) {
    keep(result.stderr_data, result.stderr_truncated, options.max_stderr_bytes, b);
  };
  cb.on_gap = [&](std::string_view stream, uint64_t, uint64_t) {
    (stream == "stderr" ? result.stderr_truncated : result.stdout_truncated) = true;
  };
  // Long polls first, the first of them the start itself (Start and wait):
  // a short command has exited by the time that answer comes, and it
  // carries all of its output, in one request. Output that keeps coming
  // past a few polls is followed as an event stream from where the polls
  // left off. (A daemon without Start and wait answers the start alone;
  // the polls then begin at offset 0.)
  StreamCursors cursors;
  std::optional<ExecInfo> exited_early;
  for (int round = 0; round < kRunPollRounds && !exited_early; ++round) {
    PollOptions o;
    o.stdout_from = cursors.stdout_next;
    o.stderr_from = cursors.stderr_next;
    o.wait = kWaitRound;
    Result<ExecPollResponse> polled = Status::Internal("no poll");
    if (round == 0) {  // not in a conditional expression: GCC 12 and co_await
      polled = co_await StartAndPollCall(t, result.id, std::move(request), o);
    } else {
      polled = co_await PollExecCall(t, result.id, o);
    }
    if (!polled.ok()) co_return polled.status();
    for (auto [slice, next, stream, deliver] :
         {std::tuple(&polled->stdout_slice, &cursors.stdout_next, "stdout", &cb.on_stdout),
          std::tuple(&polled->stderr_slice, &cursors.stderr_next, "stderr", &cb.on_stderr)}) {
      if (!*slice) continue;
      const OutputSlice& got = **slice;
      if (got.gap_from) cb.on_gap(stream, *got.gap_from, got.from);
      (*deliver)(got.from, got.data);
      *next = got.next;
    }
    const ExecInfo& e = polled->exec;
    if (!e.running && cursors.stdout_next >= e.stdout_bytes &&
        cursors.stderr_next >= e.stderr_bytes) {
      exited_early = e;
    }
  }
  if (!exited_early) {  // not in a conditional expression: GCC 12 and co_await
    Result<ExecInfo> streamed = co_await StreamExecCall(t, result.id, cursors, cb);
    if (!streamed.ok()) co_return streamed.status();
    exited_early = std::move(*streamed);
  }
  result.exec = std::move(*exited_early);
  result.exit_code = result.exec.exit_code.value_or(-1);
  result.signal = result.exec.signal;
  result.timed_out = result.exec.timed_out;
  result.killed_by = result.exec.killed_by;
  result.duration_ms = result.exec.duration_ms;
  if (options.ack) {
    Result<ExecInfo> acked = co_await AckExecCall(t, result.id);
    if (!acked.ok()) co_return acked.status();
    result.exec.acked = true;
  }
  co_return result;
}

}  // namespace agentd::client
