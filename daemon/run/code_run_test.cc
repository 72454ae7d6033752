#include "run/code_run.h"

#include <catch2/catch.hpp>
#include <functional>

#include "testing/engine_fixture.h"

using namespace agentd;
using agentd::testing::EngineFixture;

namespace {

asio::awaitable<Result<RunResponse>> RunIt(CodeRun& runner, RunRequest request,
                                           std::function<bool()> client_gone) {
  Result<RunResponse> answer = co_await runner.Run(request, client_gone);
  co_return answer;
}

RunRequest Shell(std::string code, const std::string& cwd) {
  RunRequest r;
  r.runtime = Runtime::kShell;
  r.code = std::move(code);
  r.cwd = cwd;
  return r;
}

bool HasChange(const RunResponse& r, const std::string& path, const std::string& change) {
  for (const ChangedFile& c : r.changed_files) {
    if (c.path == path && c.change == change) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("code run: output, outcome and the files the code changed", "[code_run]") {
  EngineFixture f;
  f.dir().Mkdir("work");
  f.dir().Write("work/old.txt", "old");
  f.dir().Write("work/gone.txt", "bye");
  CodeRun runner(f.engine(), f.blocking(), CodeRunOptions{});
  Result<RunResponse> r = f.Await(
      RunIt(runner,
            Shell("echo hello; echo new > new.txt; echo more >> old.txt; rm gone.txt; exit 3",
                  f.dir() / "work"),
            nullptr));
  REQUIRE(r.ok());
  CHECK(r->exit_code == 3);
  CHECK_FALSE(r->success);
  CHECK(r->stdout_text == "hello\n");
  CHECK(HasChange(*r, "new.txt", "added"));
  CHECK(HasChange(*r, "old.txt", "modified"));
  CHECK(HasChange(*r, "gone.txt", "removed"));
  CHECK(r->changed_files.size() == 3);
  // The run's record is gone once the answer is built.
  CHECK(f.engine().List().empty());
}

TEST_CASE("code run: a run that cannot start is refused before any scan or start", "[code_run]") {
  EngineFixture f;
  f.dir().Mkdir("work");
  CodeRun runner(f.engine(), f.blocking(), CodeRunOptions{});
  RunRequest request = Shell("true", f.dir() / "work");
  request.user = "no-such-user-here";
  Result<RunResponse> r = f.Await(RunIt(runner, request, nullptr));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kUnknownUser);
  CHECK(f.engine().Totals().records == 0);
}

TEST_CASE("code run: a client that left ends the run at once, not at its timeout", "[code_run]") {
  EngineFixture f;
  f.dir().Mkdir("work");
  CodeRun runner(f.engine(), f.blocking(), CodeRunOptions{});
  RunRequest request = Shell("exec sleep 300", f.dir() / "work");
  request.scan_changes = false;
  Result<RunResponse> r = f.Await(RunIt(runner, request, [] { return true; }));
  REQUIRE(r.ok());
  CHECK(r->killed_by == "kill");
  CHECK(r->signal == "KILL");
}

TEST_CASE("code run: a long output keeps its head and tail around a marker", "[code_run]") {
  EngineFixture f;
  f.dir().Mkdir("work");
  CodeRun runner(f.engine(), f.blocking(), CodeRunOptions{});
  RunRequest request = Shell("yes a | head -c 200000; printf END", f.dir() / "work");
  request.scan_changes = false;
  Result<RunResponse> r = f.Await(RunIt(runner, request, nullptr));
  REQUIRE(r.ok());
  CHECK(r->truncated);
  CHECK(r->stdout_bytes == 200003);
  CHECK(r->stdout_text.size() < 200003);
  CHECK(r->stdout_text.starts_with("a\na\n"));
  CHECK(r->stdout_text.ends_with("a\nEND"));
}
