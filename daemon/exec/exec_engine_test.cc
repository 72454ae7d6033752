#include "exec/exec_engine.h"

#include <sys/ioctl.h>

#include <catch2/catch.hpp>

#include "testing/engine_fixture.h"

using namespace agentd;
using agentd::testing::EngineFixture;

namespace {

ExecStartRequest Argv(std::vector<std::string> argv) {
  ExecStartRequest r;
  r.argv = std::move(argv);
  return r;
}

ExecId Id(std::string_view id) {
  Result<ExecId> parsed = ExecId::Parse(id);
  REQUIRE(parsed.ok());
  return *parsed;
}

asio::awaitable<Result<ExecEngine::Started>> StartLaunched(ExecEngine& engine, ExecId id,
                                                           ExecStartRequest request) {
  Result<ExecEngine::Started> started = co_await engine.StartLaunched(id, request);
  co_return started;
}

asio::awaitable<ExecInfo> WaitExited(ExecView exec) {
  while (!exec.finished()) {
    co_await exec.WaitChange(ChangeSignal::Clock::now() + std::chrono::seconds(1));
  }
  co_return exec.Info();
}

}  // namespace

TEST_CASE("exec engine: a start completes with the process launched", "[exec_engine]") {
  EngineFixture f;
  Result<ExecEngine::Started> started =
      f.Await(StartLaunched(f.engine(), Id("e1"), Argv({"/bin/sh", "-c", "echo out"})));
  REQUIRE(started.ok());
  CHECK(started->created);
  CHECK(started->exec.Info().pid > 0);
  ExecInfo info = f.Await(WaitExited(started->exec));
  CHECK(info.exit_code == 0);
  CHECK(info.stdout_bytes == 4);
}

TEST_CASE("exec engine: a spawn failure is the start's answer, not a later event",
          "[exec_engine]") {
  EngineFixture f;
  Result<ExecEngine::Started> started =
      f.Await(StartLaunched(f.engine(), Id("e1"), Argv({"/nonexistent/program"})));
  REQUIRE(started.ok());
  CHECK(started->exec.finished());
  CHECK(started->exec.Info().exit_code == 127);
}

TEST_CASE("exec engine: the same start answers the record, a different one conflicts",
          "[exec_engine]") {
  EngineFixture f;
  Result<ExecEngine::Started> first = f.engine().Start(Id("same"), Argv({"/bin/true"}));
  REQUIRE(first.ok());
  Result<ExecEngine::Started> again = f.engine().Start(Id("same"), Argv({"/bin/true"}));
  REQUIRE(again.ok());
  CHECK_FALSE(again->created);
  CHECK(again->exec == first->exec);
  Result<ExecEngine::Started> other = f.engine().Start(Id("same"), Argv({"/bin/false"}));
  REQUIRE_FALSE(other.ok());
  CHECK(other.status().code() == ErrorCode::kExecIdConflict);
}

TEST_CASE("exec engine: resize needs a PTY and names the exec", "[exec_engine]") {
  EngineFixture f;
  Result<ExecEngine::Started> started = f.engine().Start(Id("plain"), Argv({"/bin/true"}));
  REQUIRE(started.ok());
  Result<ExecInfo> resized = f.engine().Resize("plain", ResizeRequest{.rows = 40, .cols = 100});
  REQUIRE_FALSE(resized.ok());
  CHECK(resized.status().code() == ErrorCode::kNotAPty);
  CHECK(f.engine().Resize("nobody", ResizeRequest{.rows = 40, .cols = 100}).status().code() ==
        ErrorCode::kExecNotFound);
}

TEST_CASE("exec engine: a PTY exec is resized through the engine", "[exec_engine]") {
  EngineFixture f;
  ExecStartRequest r = Argv({"/bin/cat"});  // waits on its terminal until shutdown
  r.pty = PtySpec{};
  Result<ExecEngine::Started> started = f.engine().Start(Id("tty"), std::move(r));
  REQUIRE(started.ok());
  Result<ExecInfo> resized = f.engine().Resize("tty", ResizeRequest{.rows = 33, .cols = 77});
  REQUIRE(resized.ok());
  struct winsize ws {};
  const auto& master =
      EngineFixture::Record(started->exec).pipes[static_cast<int>(Stream::kStdout)];
  REQUIRE(::ioctl(master->native_handle(), TIOCGWINSZ, &ws) == 0);
  CHECK(ws.ws_row == 33);
  CHECK(ws.ws_col == 77);
}

TEST_CASE("exec engine: prepare refuses an unknown user before anything starts", "[exec_engine]") {
  EngineFixture f;
  ExecStartRequest r = Argv({"/bin/true"});
  r.user = "no-such-user-here";
  Result<ExecEngine::Prepared> prepared = f.engine().Prepare(std::move(r));
  REQUIRE_FALSE(prepared.ok());
  CHECK(prepared.status().code() == ErrorCode::kUnknownUser);
  CHECK(f.engine().List().empty());
}
