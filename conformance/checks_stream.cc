// Checks of output, streaming and the exec lifecycle (docs/PROTOCOL.md,
// "Poll", "Stream", "Ack", "Health").
#include <thread>

#include "checks.h"

namespace agentd::conformance {
namespace {

ExecStartRequest Sh(std::string command) {
  ExecStartRequest r;
  r.command = std::move(command);
  return r;
}

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
}

}  // namespace agentd::conformance
