// Metrics and ReadOutput against a real daemon, on Client and AsyncClient:
// the Prometheus text that counts what this client did, the retained bytes
// of a stream from an offset with the gap the daemon reports, and the
// bounds (an answer larger than asked for is refused, not held).
#include <catch2/catch.hpp>

#include <asio.hpp>
#include <future>
#include <regex>

#include "agentd/client/client.h"
#include "daemon_process.h"

using namespace agentd;
using namespace agentd::client;
using agentd::testing::DaemonProcess;

namespace {

ExecStartRequest CommandOf(std::string command) {
  ExecStartRequest r;
  r.command = std::move(command);
  return r;
}

// The value of agentd_execs_started_total{kind="exec"} in a metrics text.
int64_t ExecsStartedIn(const std::string& text) {
  std::smatch m;
  static const std::regex kLine(R"(\nagentd_execs_started_total\{kind="exec"\} (\d+)\n)");
  REQUIRE(std::regex_search(text, m, kLine));
  return std::stoll(m[1].str());
}

// Starts `command` and waits for its exit; answers its id.
std::string FinishedExec(Client& c, const std::string& command) {
  std::string id = MintExecId("out");
  REQUIRE(c.StartExec(id, CommandOf(command)).ok());
  auto info = c.WaitExec(id, std::chrono::seconds(60));
  REQUIRE(info.ok());
  REQUIRE(info->exit_code == 0);
  return id;
}

}  // namespace

TEST_CASE("Metrics answers the Prometheus text, counting the execs this client started",
          "[client][metrics]") {
  DaemonProcess d;
  Client c(d.client_options());
  REQUIRE(c.Run(CommandOf("true")).ok());
  auto before = c.Metrics();
  REQUIRE(before.ok());
  CHECK(before->find("# TYPE agentd_execs_started_total counter") != std::string::npos);
  REQUIRE(c.Run(CommandOf("true")).ok());
  auto after = c.Metrics();
  REQUIRE(after.ok());
  CHECK(ExecsStartedIn(*after) == ExecsStartedIn(*before) + 1);

  // A longer answer than the caller allows is refused, not held.
  auto bounded = c.Metrics(10);
  REQUIRE_FALSE(bounded.ok());
  CHECK(bounded.status().code() == ErrorCode::kProtocolError);
}

TEST_CASE("ReadOutput answers a stream's retained bytes from an offset", "[client][exec]") {
  DaemonProcess d;
  Client c(d.client_options());
  std::string id = FinishedExec(c, "printf abcdef >&2; printf 0123456789");

  auto err = c.ReadOutput(id, "stderr", 2);
  REQUIRE(err.ok());
  CHECK(err->start == 2);
  CHECK(err->next == 6);
  CHECK(err->data == "cdef");
  CHECK_FALSE(err->gap);

  auto out = c.ReadOutput(id);  // stdout from 0
  REQUIRE(out.ok());
  CHECK(out->data == "0123456789");
  CHECK(out->start == 0);
  CHECK(out->next == 10);

  auto at_end = c.ReadOutput(id, "stdout", 10);
  REQUIRE(at_end.ok());
  CHECK(at_end->data.empty());
  CHECK(at_end->next == 10);

  // Past the end is the daemon's invalid_request; more than max_bytes is refused.
  auto past = c.ReadOutput(id, "stdout", 11);
  REQUIRE_FALSE(past.ok());
  CHECK(past.status().code() == ErrorCode::kInvalidRequest);
  CHECK(past.status().http_status() == 400);
  auto bounded = c.ReadOutput(id, "stdout", 0, 4);
  REQUIRE_FALSE(bounded.ok());
  CHECK(bounded.status().code() == ErrorCode::kProtocolError);
}

TEST_CASE("ReadOutput from before the retained bytes reports the gap", "[client][exec]") {
  DaemonProcess d({"--retention-stream-bytes", "4096"});
  Client c(d.client_options());
  std::string id = FinishedExec(c, "head -c 20000 /dev/zero | tr '\\0' a");
  auto info = c.PollExec(id);
  REQUIRE(info.ok());
  uint64_t retained_from = info->exec.stdout_retained_from;
  REQUIRE(retained_from > 0);

  auto chunk = c.ReadOutput(id, "stdout", 0);
  REQUIRE(chunk.ok());
  CHECK(chunk->start == retained_from);
  CHECK(chunk->next == 20000);
  CHECK(chunk->data == std::string(20000 - retained_from, 'a'));
  REQUIRE(chunk->gap);
  CHECK(chunk->gap->first == 0);
  CHECK(chunk->gap->second == retained_from);
}

TEST_CASE("ReadOutput refuses a stream other than stdout or stderr, and an unknown exec",
          "[client][exec]") {
  DaemonProcess d;
  Client c(d.client_options());
  auto bad = c.ReadOutput("some-id", "stdin");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == ErrorCode::kInvalidRequest);
  // The client's own refusal (the daemon's would be route_not_found).
  CHECK(bad.status().message() == "stream must be \"stdout\" or \"stderr\"");
  auto missing = c.ReadOutput("no-such-exec");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == ErrorCode::kExecNotFound);
}

TEST_CASE("AsyncClient's Metrics and ReadOutput take any completion token",
          "[client][exec][async]") {
  DaemonProcess d;
  Client setup(d.client_options());
  std::string id = FinishedExec(setup, "printf async-bytes");

  asio::io_context io;
  AsyncClient c(io.get_executor(), d.client_options());
  std::optional<Result<OutputChunk>> chunk;
  c.AsyncReadOutput(id, "stdout", 6, [&](Result<OutputChunk> r) { chunk.emplace(std::move(r)); });
  std::future<Result<std::string>> metrics = c.AsyncMetrics(asio::use_future);
  io.run();
  REQUIRE(chunk);
  REQUIRE(chunk->ok());
  CHECK((*chunk)->data == "bytes");
  CHECK((*chunk)->start == 6);
  Result<std::string> text = metrics.get();
  REQUIRE(text.ok());
  CHECK(ExecsStartedIn(*text) >= 1);
}
