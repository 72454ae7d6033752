// Checks of output, streaming and the exec lifecycle (docs/PROTOCOL.md,
// "Poll", "Stream", "Ack", "Health").
#include <thread>

#include "checks.h"

namespace agentd::conformance {
namespace {

std::string Lines(int from, int to) {
  std::string s;
  for (int i = from; i <= to; ++i) s += "line-" + std::to_string(i) + "\n";
  return s;
}

void OutputBeforeReattachIsNotLost(CheckContext& ctx) {
  std::string id = ctx.NewId("detached");
  ExpectOk(ctx.client().StartExec(id, Sh("for i in $(seq 1 2000); do echo line-$i; done; "
                                         "echo to-stderr >&2")),
           "starting a detached exec");
  ExpectOk(ctx.client().WaitExec(id, std::chrono::seconds(60)), "waiting, without reading");
  // A brand-new client, with nothing but the id a harness would persist.
  auto fresh = ctx.NewClient();
  std::string out, err;
  client::StreamCallbacks cb;
  cb.on_stdout = [&](uint64_t, std::string_view b) { out.append(b); };
  cb.on_stderr = [&](uint64_t, std::string_view b) { err.append(b); };
  ExecInfo e = ExpectOk(fresh->Stream(id, {}, cb), "streaming from a new client");
  Expect(out == Lines(1, 2000), "every stdout byte produced before the reattach arrived");
  Expect(err == "to-stderr\n", "every stderr byte arrived");
  Expect(e.stdout_bytes == out.size(), "the exit event's stdout_bytes is final");
}

void ResumeFromSavedCursorsIsExact(CheckContext& ctx) {
  std::string id = ctx.NewId("resume");
  ExpectOk(ctx.client().StartExec(id, Sh("for i in $(seq 1 300); do echo line-$i; done; sleep 1; "
                                         "for i in $(seq 301 600); do echo line-$i; done")),
           "start");
  client::PollOptions o;
  o.stdout_from = 0;
  o.stderr_from = 0;
  o.wait = std::chrono::milliseconds(3000);
  ExecPollResponse first = ExpectOk(ctx.client().PollExec(id, o), "reading part of the output");
  Expect(first.stdout_slice && !first.stdout_slice->data.empty(), "the first poll saw output");
  client::StreamCursors saved{first.stdout_slice->next, first.stderr_slice->next};
  auto fresh = ctx.NewClient();
  std::string rest;
  client::StreamCallbacks cb;
  cb.on_stdout = [&](uint64_t, std::string_view b) { rest.append(b); };
  ExpectOk(fresh->Stream(id, saved, cb), "resuming from the saved cursors");
  Expect(first.stdout_slice->data + rest == Lines(1, 600),
         "the resumed stream neither repeats nor loses a byte");
}

void PollIsReadOnly(CheckContext& ctx) {
  std::string id = ctx.NewId("poll");
  client::RunResult r = ExpectOk(
      ctx.client().Run(Sh("echo one; echo two >&2"), {.id = id, .ack = false}), "run without ack");
  (void)r;
  client::PollOptions o;
  o.stdout_from = 0;
  o.stderr_from = 0;
  ExecPollResponse a = ExpectOk(ctx.client().PollExec(id, o), "first poll");
  ExecPollResponse b = ExpectOk(ctx.client().PollExec(id, o), "second poll");
  Expect(json::Serialize(EncodeExecPollResponse(a)) == json::Serialize(EncodeExecPollResponse(b)),
         "two identical polls answer the same");
  Expect(a.stdout_slice->data == "one\n" && a.stderr_slice->data == "two\n",
         "poll returns both streams from the cursors");
  Expect(!a.exec.acked, "polling does not ack");
}

void LongPollAnswersOnNewOutput(CheckContext& ctx) {
  std::string id = ctx.NewId("longpoll");
  ExpectOk(ctx.client().StartExec(id, Sh("sleep 0.5; echo late")), "start");
  client::PollOptions o;
  o.stdout_from = 0;
  o.wait = std::chrono::milliseconds(20000);
  auto start = std::chrono::steady_clock::now();
  ExecPollResponse p = ExpectOk(ctx.client().PollExec(id, o), "long poll");
  auto took = std::chrono::steady_clock::now() - start;
  Expect(took < std::chrono::seconds(15),
         "a long poll answers when output arrives, not at the deadline");
  Expect(!p.stdout_slice->data.empty() || !p.exec.running, "the answer carries the new output");
}

void AckOfARunningExecIsRefused(CheckContext& ctx) {
  std::string id = ctx.NewId("ackrun");
  ExpectOk(ctx.client().StartExec(id, Sh("sleep 5")), "start");
  ExpectError(ctx.client().AckExec(id), ErrorCode::kExecRunning, "ack of a running exec");
  ExpectOk(ctx.client().KillExec(id), "kill");
  ExpectOk(ctx.client().WaitExec(id, std::chrono::seconds(30)), "wait");
  ExecInfo acked = ExpectOk(ctx.client().AckExec(id), "ack after exit");
  Expect(acked.acked, "ack sets acked");
  ExpectOk(ctx.client().AckExec(id), "a second ack (idempotent)");
}

void BusyMeansProducing(CheckContext& ctx) {
  std::string id = ctx.NewId("busy");
  ExpectOk(ctx.client().StartExec(id, Sh("sleep 1")), "start");
  HealthResponse during = ExpectOk(ctx.client().Health(), "health while running");
  Expect(during.busy, "busy is true while an exec's process runs");
  ExpectOk(ctx.client().WaitExec(id, std::chrono::seconds(30)), "wait");
  // Other checks' execs may still run on a shared guest; give them a moment.
  HealthResponse after;
  for (int i = 0; i < 50; ++i) {
    after = ExpectOk(ctx.client().Health(), "health after exit");
    if (!after.busy) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  Expect(!after.busy, "an exited exec waiting for its ack is not busy");
  Expect(after.execs >= 1, "execs still counts the unread record");
  ExpectOk(ctx.client().AckExec(id), "ack");
}

int64_t HealthNumber(CheckContext& ctx, std::string_view key, std::string_view sub = {}) {
  HealthResponse h = ExpectOk(ctx.client().Health(), "health");
  const json::Value* v = h.extra.Find(key);
  if (v && !sub.empty()) v = v->Find(sub);
  if (!v || !v->is_int()) {
    throw CheckSkipped{"health does not report " + std::string(key) + " " + std::string(sub)};
  }
  return v->as_int();
}

void AckedRecordIsReleasedAfterTtl(CheckContext& ctx) {
  int64_t ttl = HealthNumber(ctx, "ack_ttl_sec");
  if (ttl > 10) {
    throw CheckSkipped{"--ack-ttl-sec is " + std::to_string(ttl) +
                       "; run the daemon with 10 or "
                       "less to check release"};
  }
  std::string id = ctx.NewId("ttl");
  client::RunOptions o;
  o.id = id;
  ExpectOk(ctx.client().Run(Sh("echo bye"), o), "run and ack");
  ExpectOk(ctx.client().PollExec(id), "the record remains within the TTL");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(ttl + 10);
  Result<ExecPollResponse> p = ctx.client().PollExec(id);
  while (p.ok() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    p = ctx.client().PollExec(id);
  }
  ExpectError(p, ErrorCode::kExecReleased, "a poll after the TTL");
  ExpectError(ctx.client().StartExec(id, Sh("echo bye")), ErrorCode::kExecReleased,
              "a late retry of the start");
}

void RetentionOverflowIsAnExplicitGap(CheckContext& ctx) {
  int64_t cap = HealthNumber(ctx, "retention", "stream_bytes");
  if (cap > (16 << 20)) {
    throw CheckSkipped{"retention.stream_bytes is " + std::to_string(cap) +
                       "; run the daemon "
                       "with --retention-stream-bytes of 16 MiB or less to check gaps"};
  }
  uint64_t total = static_cast<uint64_t>(cap) + (1 << 20);
  std::string id = ctx.NewId("gap");
  ExpectOk(ctx.client().StartExec(id, Sh("head -c " + std::to_string(total) + " /dev/zero")),
           "start");
  ExpectOk(ctx.client().WaitExec(id, std::chrono::seconds(120)), "wait");
  uint64_t delivered = 0, gap_bytes = 0;
  client::StreamCallbacks cb;
  cb.on_stdout = [&](uint64_t, std::string_view b) { delivered += b.size(); };
  cb.on_gap = [&](std::string_view stream, uint64_t from, uint64_t to) {
    if (stream == "stdout") gap_bytes += to - from;
  };
  ExecInfo e = ExpectOk(ctx.client().Stream(id, {}, cb), "stream from 0");
  Expect(gap_bytes > 0, "bytes beyond the retention cap are reported as a gap");
  Expect(delivered + gap_bytes == total, "every byte is either delivered or inside a gap");
  Expect(e.stdout_retained_from == gap_bytes, "stdout_retained_from marks where retention starts");
  ExpectOk(ctx.client().AckExec(id), "ack");
}

void ListShowsTheRecord(CheckContext& ctx) {
  std::string id = ctx.NewId("list");
  ExpectOk(ctx.client().Run(Sh("true"), {.id = id, .ack = false}), "run");
  std::vector<ExecInfo> all = ExpectOk(ctx.client().ListExecs(), "list");
  bool found = false;
  for (const ExecInfo& e : all) found = found || e.id == id;
  Expect(found, "the list includes an exited, unacked exec");
}

}  // namespace

void AddStreamChecks(std::vector<Check>& checks) {
  checks.push_back({"streaming", "no output produced before the reattach was lost",
                    OutputBeforeReattachIsNotLost});
  checks.push_back({"streaming", "a resume from saved cursors neither repeats nor loses a byte",
                    ResumeFromSavedCursorsIsExact});
  checks.push_back({"streaming", "poll is read-only", PollIsReadOnly});
  checks.push_back(
      {"streaming", "a long poll answers when output arrives", LongPollAnswersOnNewOutput});
  checks.push_back({"lifecycle", "ack of a running exec is exec_running; ack is idempotent",
                    AckOfARunningExecIsRefused});
  checks.push_back(
      {"health", "busy means producing, and execs counts unread records", BusyMeansProducing});
  checks.push_back({"lifecycle", "list includes exited, unacked execs", ListShowsTheRecord});
  checks.push_back({"lifecycle",
                    "an acked record is released after the TTL and its id answers exec_released",
                    AckedRecordIsReleasedAfterTtl});
  checks.push_back({"streaming", "output beyond the retention cap is an explicit gap, never silent",
                    RetentionOverflowIsAnExplicitGap});
}

}  // namespace agentd::conformance
