// Every AsyncClient call left to its trailing arguments' defaults, from a
// coroutine, against a real daemon. GCC 12 at -O2 miscompiles a default
// argument's temporary in a coroutine's co_await expression:
// `co_await c.Run(request)` died with "free(): invalid pointer" while
// AsyncClient::Run had `RunOptions options = {}`. AsyncClient now has no
// default arguments, only overloads that forward explicitly; this test
// calls each of them.
#include <catch2/catch.hpp>

#include <asio.hpp>
#include <filesystem>
#include <fstream>
#include <optional>

#include "agentd/client/async_client.h"
#include "agentd/client/client.h"
#include "daemon_process.h"

using namespace agentd;
using namespace agentd::client;
using agentd::testing::DaemonProcess;

namespace {

ExecStartRequest Shell(std::string command) {
  ExecStartRequest r;
  r.command = std::move(command);
  return r;
}

// Runs `body` as a coroutine on a fresh io_context and rethrows whatever
// it threw, so a failed REQUIRE inside the coroutine fails the test.
template <typename Body>
void RunCoroutine(Body body) {
  asio::io_context io;
  std::exception_ptr failure;
  bool finished = false;
  asio::co_spawn(io, body(io.get_executor()), [&](std::exception_ptr e) {
    failure = e;
    finished = true;
  });
  io.run();
  if (failure) std::rethrow_exception(failure);
  REQUIRE(finished);
}

}  // namespace

TEST_CASE("AsyncClient exec coroutines work with their default arguments",
          "[client][exec][async]") {
  DaemonProcess d;
  RunCoroutine([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    AsyncClient c(ex, d.client_options());

    auto metrics = co_await c.Metrics();
    REQUIRE(metrics.ok());
    CHECK(metrics->find("agentd_") != std::string::npos);

    auto run = co_await c.Run(Shell("printf default-run"));
    REQUIRE(run.ok());
    CHECK(run->exit_code == 0);
    CHECK(run->stdout_data == "default-run");
    CHECK(run->exec.acked);

    auto poll = co_await c.PollExec(run->id);
    REQUIRE(poll.ok());
    CHECK_FALSE(poll->exec.running);

    auto whole = co_await c.ReadOutput(run->id);
    REQUIRE(whole.ok());
    CHECK(whole->data == "default-run");
    auto named = co_await c.ReadOutput(run->id, "stdout");
    REQUIRE(named.ok());
    CHECK(named->data == "default-run");
    auto from = co_await c.ReadOutput(run->id, "stdout", 8);
    REQUIRE(from.ok());
    CHECK(from->data == "run");

    std::string echo_id = MintExecId("defaults");
    ExecStartRequest echo = Shell("read line; echo got-$line; sleep 60");
    echo.stdin_stream = true;
    REQUIRE((co_await c.StartExec(echo_id, echo)).ok());
    auto taken = co_await c.WriteStdin(echo_id, 0, "ping\n");
    REQUIRE(taken.ok());
    CHECK(*taken == 5);
    auto matched = co_await c.WaitForOutput(echo_id, "got-ping");
    REQUIRE(matched.ok());
    REQUIRE(matched->match);
    auto killed = co_await c.KillExec(echo_id);
    REQUIRE(killed.ok());
  });
}

TEST_CASE("AsyncClient file, tree and port coroutines work with their default arguments",
          "[client][files][async]") {
  DaemonProcess d;
  namespace fs = std::filesystem;
  fs::path local = fs::path(d.dir()) / "local-src";
  fs::create_directories(local);
  std::ofstream(local / "a.txt") << "alpha\n";
  std::string guest = d.dir() + "/guest";
  fs::create_directories(guest + "/tree");  // the daemon extracts into an existing directory

  RunCoroutine([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    AsyncClient c(ex, d.client_options());

    std::string file = guest + "/f.txt";
    auto written = co_await c.WriteFile(file, "needle here\n");
    REQUIRE(written.ok());
    auto read = co_await c.ReadFile(file);
    REQUIRE(read.ok());
    CHECK(*read == "needle here\n");
    auto tagged = co_await c.ReadFileWithEtag(file);
    REQUIRE(tagged.ok());
    CHECK(tagged->data == "needle here\n");
    CHECK(tagged->etag);

    bool sent = false;
    ByteSource source = [&]() -> Result<std::string_view> {
      if (sent) return std::string_view();
      sent = true;
      return std::string_view("streamed\n");
    };
    auto streamed = co_await c.WriteFileFrom(guest + "/g.txt", std::move(source));
    REQUIRE(streamed.ok());
    CHECK(streamed->size == 9);

    auto st = co_await c.Stat(file);
    REQUIRE(st.ok());
    CHECK(st->size == 12);

    auto found = co_await c.Search(guest, "needle");
    REQUIRE(found.ok());
    REQUIRE(found->matches.size() == 1);
    CHECK(found->matches[0].line == 1);
    auto globbed = co_await c.Glob(guest, "*.txt");
    REQUIRE(globbed.ok());
    CHECK(globbed->entries.size() == 2);

    // A named request: GCC 12 also miscompiles a braced aggregate built
    // from temporaries inside a co_await expression (not the library's to
    // fix; this test is about the defaults).
    RenameRequest move{file, guest + "/h.txt"};
    auto renamed = co_await c.Rename(std::move(move));
    REQUIRE(renamed.ok());
    auto removed = co_await c.Remove(guest + "/h.txt");
    REQUIRE(removed.ok());
    CHECK(removed->removed == 1);
    auto removed_again = co_await c.Remove(guest + "/g.txt", false);
    REQUIRE(removed_again.ok());

    auto up = co_await c.UploadDir(local.string(), guest + "/tree");
    INFO(up.status().message());
    REQUIRE(up.ok());
    CHECK(up->bytes == 6);
    fs::path back = fs::path(d.dir()) / "local-back";
    auto down = co_await c.DownloadDir(guest + "/tree", back.string());
    REQUIRE(down.ok());
    CHECK(down->bytes == 6);

    auto there = co_await c.WaitForPath(guest + "/tree/a.txt", false);
    REQUIRE(there.ok());
    CHECK(*there);
    // The daemon's own port listens in the same network namespace.
    auto listening = co_await c.WaitForPort(static_cast<uint16_t>(d.port()));
    REQUIRE(listening.ok());
    CHECK(*listening);
  });
}
