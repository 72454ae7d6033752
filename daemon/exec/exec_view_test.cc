#include "exec/exec_view.h"

#include <catch2/catch.hpp>
#include <type_traits>

#include "exec/exec_engine.h"
#include "testing/engine_fixture.h"

using namespace agentd;
using agentd::testing::EngineFixture;

namespace {

// What the routes get to read is read-only: the output logs come back
// const, so appending or releasing bytes does not compile above the engine.
static_assert(std::is_same_v<decltype(std::declval<const ExecView&>().log(Stream::kStdout)),
                             const OutputLog&>);
// Only the engine makes views (from its records).
static_assert(!std::is_constructible_v<ExecView, std::shared_ptr<ExecRecord>>);

ExecStartRequest ViewShell(std::string script) {
  ExecStartRequest r;
  r.argv = {"/bin/sh", "-c", std::move(script)};
  return r;
}

ExecId ViewId(std::string_view id) {
  Result<ExecId> parsed = ExecId::Parse(id);
  REQUIRE(parsed.ok());
  return *parsed;
}

asio::awaitable<bool> WaitViewEnded(ExecView exec) {
  // Bounded by the exec's own end: the script exits at once.
  while (!exec.ended()) co_await exec.WaitChange(ChangeSignal::Clock::time_point::max());
  co_return true;
}

// Bounded by the exec's output: the script prints at once.
asio::awaitable<bool> WaitViewOutput(ExecView exec, uint64_t bytes) {
  while (exec.log(Stream::kStdout).next() < bytes) {
    co_await exec.WaitChange(ChangeSignal::Clock::time_point::max());
  }
  co_return true;
}

asio::awaitable<Result<ExecEngine::Started>> StartForView(ExecEngine& engine, ExecId id,
                                                          ExecStartRequest request) {
  Result<ExecEngine::Started> started = co_await engine.StartLaunched(id, request);
  co_return started;
}

}  // namespace

TEST_CASE("exec view: shows the engine's record, its output and its end", "[exec_view]") {
  EngineFixture f;
  Result<ExecEngine::Started> started = f.Await(
      StartForView(f.engine(), ViewId("v1"), ViewShell("printf out; printf err >&2; exit 3")));
  REQUIRE(started.ok());
  ExecView exec = started->exec;
  CHECK(exec.id() == "v1");
  REQUIRE(f.Await(WaitViewEnded(exec)));

  CHECK(exec.finished());
  ExecInfo info = exec.Info();
  CHECK(info.exit_code == 3);
  CHECK_FALSE(info.running);
  CHECK(info.pid == EngineFixture::Record(exec).pid);
  std::string out, err;
  REQUIRE(exec.log(Stream::kStdout).Read(0, 100, &out).ok());
  REQUIRE(exec.log(Stream::kStderr).Read(0, 100, &err).ok());
  CHECK(out == "out");
  CHECK(err == "err");
  CHECK(info.stdout_bytes == exec.log(Stream::kStdout).next());

  Result<ExecView> found = f.engine().Find("v1");
  REQUIRE(found.ok());
  CHECK(*found == exec);
}

TEST_CASE("exec view: a view held across a reset reads as ended, its output still readable",
          "[exec_view]") {
  EngineFixture f;
  Result<ExecEngine::Started> started =
      f.Await(StartForView(f.engine(), ViewId("v2"), ViewShell("printf kept; exec sleep 1000")));
  REQUIRE(started.ok());
  ExecView exec = started->exec;
  REQUIRE(f.Await(WaitViewOutput(exec, 4)));
  CHECK_FALSE(exec.ended());

  // A reset drops the record while a reader holds it; its process may not
  // have exited yet, but nothing more will be written.
  f.engine().KillAll();
  std::vector<std::string> dirs = f.engine().DropAll();
  CHECK(dirs.size() == 1);
  CHECK(exec.ended());
  CHECK_FALSE(exec.finished());
  CHECK(f.engine().Find("v2").status().code() == ErrorCode::kExecNotFound);
  std::string out;
  REQUIRE(exec.log(Stream::kStdout).Read(0, 100, &out).ok());
  CHECK(out == "kept");
}
