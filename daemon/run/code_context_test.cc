#include "run/code_context.h"

#include <catch2/catch.hpp>
#include <memory>

#include "testing/engine_fixture.h"

using namespace agentd;
using agentd::testing::EngineFixture;

namespace {

ContextCreateRequest Python(const std::string& id, const std::string& cwd) {
  ContextCreateRequest r;
  r.id = id;
  r.spec.runtime = Runtime::kPython;
  r.spec.cwd = cwd;
  return r;
}

ContextRunRequest Cell(std::string code, std::optional<int64_t> timeout_sec = std::nullopt) {
  ContextRunRequest r;
  r.code = std::move(code);
  r.timeout_sec = timeout_sec;
  return r;
}

asio::awaitable<Status> StartIt(std::shared_ptr<CodeContext> c) { co_return co_await c->Start(); }

asio::awaitable<Result<RunResponse>> RunIt(std::shared_ptr<CodeContext> c, ContextRunRequest r) {
  Result<json::Value> answer = co_await c->Run(std::move(r));
  if (!answer.ok()) co_return answer.status();
  co_return DecodeRunResponse(*answer);
}

asio::awaitable<bool> EndIt(std::shared_ptr<CodeContext> c) {
  co_await c->End("deleted");
  co_return true;
}

}  // namespace

TEST_CASE("context: names persist and each answer has only its own run's output",
          "[code_context]") {
  EngineFixture f;
  CodeRunOptions options;
  auto c = std::make_shared<CodeContext>(f.engine(), f.blocking(), options,
                                         Python("keep", f.dir().path()));
  REQUIRE(f.Await(StartIt(c)).ok());
  Result<RunResponse> first = f.Await(RunIt(c, Cell("n = 41\nprint('one')\nimport sys\n"
                                                    "print('warn', file=sys.stderr)")));
  REQUIRE(first.ok());
  CHECK(first->exit_code == 0);
  CHECK(first->stdout_text == "one\n");
  CHECK(first->stderr_text == "warn\n");
  Result<RunResponse> second = f.Await(RunIt(c, Cell("n += 1\nprint(n, end='')")));
  REQUIRE(second.ok());
  CHECK(second->stdout_text == "42");
  CHECK(second->stderr_text.empty());
  CHECK(second->stdout_bytes == 2);
  Result<RunResponse> failed = f.Await(RunIt(c, Cell("x = 1\n{}['k']\n")));
  REQUIRE(failed.ok());
  CHECK(failed->exit_code == 1);
  REQUIRE(failed->exception.has_value());
  CHECK(failed->exception->type == "KeyError");
  CHECK(failed->exception->line == 2);
  CHECK(c->Info().runs == 3);
  CHECK(c->Info().state == "ready");
  CHECK(f.Await(EndIt(c)));
  CHECK(c->Info().state == "ended");
  CHECK(*c->Info().ended_reason == "deleted");
}

TEST_CASE("context: a run past its deadline ends the context naming the timeout",
          "[code_context]") {
  EngineFixture f;
  CodeRunOptions options;
  auto c = std::make_shared<CodeContext>(f.engine(), f.blocking(), options,
                                         Python("slow", f.dir().path()));
  REQUIRE(f.Await(StartIt(c)).ok());
  Result<RunResponse> r = f.Await(RunIt(c, Cell("import time\ntime.sleep(30)", 1)));
  REQUIRE(r.ok());
  CHECK(r->timed_out);
  CHECK(r->killed_by == "timeout");
  Result<RunResponse> after = f.Await(RunIt(c, Cell("print(1)")));
  REQUIRE_FALSE(after.ok());
  CHECK(after.status().code() == ErrorCode::kContextGone);
  CHECK(*c->Info().ended_reason == "limit");
}
