// The client's exec calls against a real daemon: Run, retry safety of
// start, stream resume through a proxy that cuts connections at random
// points, reattach from persisted ids, and many execs on one thread.
#include <catch2/catch.hpp>

#include <asio.hpp>
#include <random>

#include "agentd/client/client.h"
#include "cutting_proxy.h"
#include "daemon_process.h"

using namespace agentd;
using namespace agentd::client;
using agentd::testing::CuttingProxy;
using agentd::testing::DaemonProcess;

namespace {

ClientOptions RetryingOptions(const std::string& url, const std::string& token) {
  ClientOptions o;
  o.url = url;
  o.token = token;
  o.backoff_initial = std::chrono::milliseconds(2);
  o.backoff_max = std::chrono::milliseconds(20);
  o.max_stream_reconnects = 1000;
  o.max_attempts = 50;
  return o;
}

ExecStartRequest Shell(std::string command) {
  ExecStartRequest r;
  r.command = std::move(command);
  return r;
}

std::string Proxied(const CuttingProxy& p) {
  return "http://127.0.0.1:" + std::to_string(p.port());
}

}  // namespace

TEST_CASE("Run returns exit code, output and duration, then acks", "[client][exec]") {
  DaemonProcess d;
  Client c(RetryingOptions(d.url(), d.token()));
  auto r = c.Run(Shell("echo out; echo err >&2; exit 3"));
  REQUIRE(r.ok());
  CHECK(r->exit_code == 3);
  CHECK(r->stdout_data == "out\n");
  CHECK(r->stderr_data == "err\n");
  CHECK_FALSE(r->timed_out);
  CHECK(r->exec.acked);
  auto poll = c.PollExec(r->id);
  REQUIRE(poll.ok());
  CHECK(poll->exec.acked);
}

TEST_CASE("Run hands over from long polls to the event stream without losing or repeating a byte",
          "[client][exec]") {
  DaemonProcess d;
  Client c(RetryingOptions(d.url(), d.token()));
  // More than the polls carry (1 MiB per stream per poll): the rest streams.
  std::string expected;
  for (int i = 1; i <= 700000; ++i) expected += std::to_string(i) + "\n";
  auto big = c.Run(Shell("seq 1 700000; echo done >&2"));
  REQUIRE(big.ok());
  CHECK(big->stdout_data.size() == expected.size());
  CHECK(big->stdout_data == expected);
  CHECK(big->stderr_data == "done\n");
  // Output that trickles: each poll answers early, the stream takes over.
  auto slow = c.Run(Shell("for i in 1 2 3 4 5 6; do echo line$i; sleep 0.05; done"));
  REQUIRE(slow.ok());
  CHECK(slow->stdout_data == "line1\nline2\nline3\nline4\nline5\nline6\n");
  CHECK(slow->exit_code == 0);
}

TEST_CASE("Run reports a signal as 128+n and a timeout as 124", "[client][exec]") {
  DaemonProcess d;
  Client c(RetryingOptions(d.url(), d.token()));
  auto killed = c.Run(Shell("kill -KILL $$"));
  REQUIRE(killed.ok());
  CHECK(killed->exit_code == 128 + 9);
  CHECK(killed->signal == "KILL");
  ExecStartRequest slow = Shell("echo before; sleep 30");
  slow.timeout_sec = 1;
  auto timed = c.Run(slow);
  REQUIRE(timed.ok());
  CHECK(timed->exit_code == 124);
  CHECK(timed->timed_out);
  CHECK(timed->stdout_data == "before\n");
}

TEST_CASE("Run bounds kept output and says it truncated", "[client][exec]") {
  DaemonProcess d;
  Client c(RetryingOptions(d.url(), d.token()));
  RunOptions o;
  o.max_stdout_bytes = 10;
  auto r = c.Run(Shell("head -c 100000 /dev/zero"), o);
  REQUIRE(r.ok());
  CHECK(r->stdout_data.size() == 10);
  CHECK(r->stdout_truncated);
  CHECK(r->exec.stdout_bytes == 100000);
}

TEST_CASE("a start retried after its response was lost runs the command once",
          "[client][exec][retry]") {
  DaemonProcess d;
  std::string marker = d.dir() + "/runs";
  // The first connection is cut before any byte of the answer arrives: the
  // daemon started the exec, but the client never heard.
  CuttingProxy proxy(d.port(), [](int n) { return n == 0 ? uint64_t{0} : UINT64_MAX; });
  Client c(RetryingOptions(Proxied(proxy), d.token()));
  std::string id = MintExecId("once");
  auto started = c.StartExec(id, Shell("echo run >> " + marker));
  REQUIRE(started.ok());
  CHECK(proxy.cuts() >= 1);
  REQUIRE(c.WaitExec(id, std::chrono::seconds(10)).ok());
  auto count = c.Run(Shell("wc -l < " + marker));
  REQUIRE(count.ok());
  CHECK(count->stdout_data == "1\n");
}

TEST_CASE("a stream cut at random points delivers every byte exactly once",
          "[client][exec][stream]") {
  DaemonProcess d;
  Client direct(RetryingOptions(d.url(), d.token()));
  // 3 MiB of random binary output, printed as fast as the child can.
  std::string file = d.dir() + "/payload";
  std::string id = MintExecId("cut");
  REQUIRE(direct.StartExec(id, Shell("head -c 3145728 /dev/urandom | tee " + file)).ok());
  std::mt19937 rng(42);
  CuttingProxy proxy(d.port(), [&rng](int) {
    return uint64_t{std::uniform_int_distribution<uint64_t>(1, 200000)(rng)};
  });
  Client c(RetryingOptions(Proxied(proxy), d.token()));
  std::string got;
  int reconnects = 0;
  StreamCallbacks cb;
  cb.on_stdout = [&](uint64_t offset, std::string_view bytes) {
    REQUIRE(offset == got.size());
    got.append(bytes);
  };
  cb.on_reconnect = [&](int, const Status&) { ++reconnects; };
  auto exited = c.Stream(id, {}, cb);
  REQUIRE(exited.ok());
  CHECK(exited->exit_code == 0);
  CHECK(reconnects > 3);
  CHECK(got.size() == 3145728);
  RunOptions big;
  big.max_stdout_bytes = 8u << 20;
  auto reference = direct.Run(Shell("cat " + file), big);
  REQUIRE(reference.ok());
  CHECK(got == reference->stdout_data);
}

TEST_CASE("a fresh client reattaches from only the id and saved cursors",
          "[client][exec][stream]") {
  DaemonProcess d;
  std::string id = MintExecId("reattach");
  StreamCursors saved;
  std::string first_part;
  {
    Client first(RetryingOptions(d.url(), d.token()));
    REQUIRE(first
                .StartExec(id, Shell("for i in $(seq 1 200); do echo line-$i; done; sleep 0.5; "
                                     "for i in $(seq 201 400); do echo line-$i; done"))
                .ok());
    PollOptions o;
    o.stdout_from = 0;
    o.stderr_from = 0;
    o.wait = std::chrono::milliseconds(2000);
    auto p = first.PollExec(id, o);
    REQUIRE(p.ok());
    first_part = p->stdout_slice->data;
    saved = {p->stdout_slice->next, p->stderr_slice->next};
    REQUIRE_FALSE(first_part.empty());
  }  // the first harness is gone; only `id` and `saved` survive
  Client second(RetryingOptions(d.url(), d.token()));
  std::string rest;
  StreamCallbacks cb;
  cb.on_stdout = [&](uint64_t, std::string_view b) { rest.append(b); };
  REQUIRE(second.Stream(id, saved, cb).ok());
  std::string expected;
  for (int i = 1; i <= 400; ++i) expected += "line-" + std::to_string(i) + "\n";
  CHECK(first_part + rest == expected);
}

TEST_CASE("200 concurrent execs driven from one thread with the async API",
          "[client][exec][async]") {
  DaemonProcess d;
  asio::io_context io;
  AsyncClient c(io.get_executor(), RetryingOptions(d.url(), d.token()));
  int done = 0, correct = 0;
  for (int i = 0; i < 200; ++i) {
    c.AsyncRun(Shell("echo exec-" + std::to_string(i)), RunOptions{}, [&, i](Result<RunResult> r) {
      ++done;
      if (r.ok() && r->exit_code == 0 && r->stdout_data == "exec-" + std::to_string(i) + "\n") {
        ++correct;
      }
    });
  }
  io.run();
  CHECK(done == 200);
  CHECK(correct == 200);
}

TEST_CASE("stdin written in pieces by offset is delivered once, even when retried",
          "[client][exec]") {
  DaemonProcess d;
  Client c(RetryingOptions(d.url(), d.token()));
  std::string id = MintExecId("stdin");
  ExecStartRequest r = Shell("cat");
  r.stdin_stream = true;
  REQUIRE(c.StartExec(id, r).ok());
  auto n1 = c.WriteStdin(id, 0, "hello ");
  REQUIRE(n1.ok());
  CHECK(*n1 == 6);
  auto again = c.WriteStdin(id, 0, "hello ");  // a retry of the same bytes
  REQUIRE(again.ok());
  CHECK(*again == 6);
  auto n2 = c.WriteStdin(id, 6, "world", /*eof=*/true);
  REQUIRE(n2.ok());
  std::string out;
  StreamCallbacks cb;
  cb.on_stdout = [&](uint64_t, std::string_view b) { out.append(b); };
  REQUIRE(c.Stream(id, {}, cb).ok());
  CHECK(out == "hello world");
}

TEST_CASE("exec errors arrive as the daemon's stable codes", "[client][exec]") {
  DaemonProcess d;
  Client c(RetryingOptions(d.url(), d.token()));
  auto missing = c.PollExec("no-such-exec");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == ErrorCode::kExecNotFound);
  std::string id = MintExecId("conflict");
  REQUIRE(c.StartExec(id, Shell("true")).ok());
  auto conflict = c.StartExec(id, Shell("false"));
  REQUIRE_FALSE(conflict.ok());
  CHECK(conflict.status().code() == ErrorCode::kExecIdConflict);
  auto bad = c.StartExec("bad id!", Shell("true"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == ErrorCode::kInvalidRequest);
}
