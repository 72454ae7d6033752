#include <catch2/catch.hpp>

#include "config/daemon_config.h"

using namespace agentd;

namespace {
Result<ParsedFlags> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "agentd");
  return ParseFlags(static_cast<int>(args.size()), args.data());
}
}  // namespace

TEST_CASE("flags parse both --flag value and --flag=value", "[flags]") {
  auto f = Parse({"--listen", "127.0.0.1:1", "--listen=unix:/tmp/x.sock", "--ack-ttl-sec=5",
                  "--fs-root", "/srv"});
  REQUIRE(f.ok());
  CHECK(f->config.listen.size() == 2);
  CHECK(f->config.listen[1].kind == ListenAddress::Kind::kUnix);
  CHECK(f->config.engine.ack_ttl_sec == 5);
  CHECK(f->config.fs_root == "/srv");
}

TEST_CASE("flags refuse unknown flags, missing values and bad numbers by name", "[flags]") {
  CHECK(Parse({"--nope"}).status().details().Find("flag")->as_string() == "nope");
  CHECK_FALSE(Parse({"--state-dir"}).ok());
  CHECK_FALSE(Parse({"--ack-ttl-sec", "-1"}).ok());
  CHECK_FALSE(Parse({"--ack-ttl-sec", "12x"}).ok());
  CHECK_FALSE(Parse({"--log-level", "loud"}).ok());
  CHECK_FALSE(Parse({"stray"}).ok());
}

TEST_CASE("help lists every contract flag", "[flags]") {
  std::string help = HelpText();
  for (const char* flag : {"--listen", "--token-file", "--state-dir", "--ack-ttl-sec", "--fs-root",
                           "--workdir", "--log-level", "--version", "--help"}) {
    CHECK(help.find(flag) != std::string::npos);
  }
  CHECK(Parse({"--help"})->action == ParsedFlags::Action::kHelp);
  CHECK(Parse({"--version"})->action == ParsedFlags::Action::kVersion);
}

TEST_CASE("init takes the command after -- or after the last flag", "[flags][init]") {
  auto dashed = Parse({"--init", "--listen", "127.0.0.1:1", "--", "sh", "-c", "--listen x"});
  REQUIRE(dashed.ok());
  CHECK(dashed->config.init);
  CHECK(dashed->config.command == std::vector<std::string>{"sh", "-c", "--listen x"});
  CHECK(dashed->config.listen.size() == 1);

  auto bare = Parse({"--exit-with-cmd", "--init", "nginx", "-g", "daemon off;"});
  REQUIRE(bare.ok());
  CHECK(bare->config.exit_with_cmd);
  CHECK(bare->config.command == std::vector<std::string>{"nginx", "-g", "daemon off;"});

  auto alone = Parse({"--init"});
  REQUIRE(alone.ok());
  CHECK(alone->config.command.empty());
}

TEST_CASE("a command without --init and --exit-with-cmd without a command are refused",
          "[flags][init]") {
  CHECK_FALSE(Parse({"sleep", "1"}).ok());
  CHECK_FALSE(Parse({"--", "sleep", "1"}).ok());
  CHECK_FALSE(Parse({"--init", "--exit-with-cmd"}).ok());
  CHECK_FALSE(Parse({"--exit-with-cmd", "--", "true"}).ok());
  CHECK_FALSE(Parse({"--init=yes"}).ok());
}

TEST_CASE("init-user takes USER or USER:GROUP and needs a command", "[flags][init]") {
  auto named = Parse({"--init", "--init-user", "app:staff", "--", "sleep", "1"});
  REQUIRE(named.ok());
  CHECK(named->config.init_user == "app:staff");
  CHECK(Parse({"--init", "--init-user=1000", "sleep", "1"})->config.init_user == "1000");
  CHECK_FALSE(Parse({"--init", "--init-user=1000"}).ok());
  CHECK_FALSE(Parse({"--init", "--init-user=", "--", "true"}).ok());
  CHECK_FALSE(Parse({"--init", "--init-user=app:", "--", "true"}).ok());
  CHECK_FALSE(Parse({"--init", "--init-user=:staff", "--", "true"}).ok());
}

TEST_CASE("state-sync takes none, batch or always, batch by default", "[flags]") {
  CHECK(Parse({})->config.engine.state_sync == StateSyncMode::kBatch);
  CHECK(Parse({"--state-sync", "none"})->config.engine.state_sync == StateSyncMode::kNone);
  CHECK(Parse({"--state-sync=always"})->config.engine.state_sync == StateSyncMode::kAlways);
  Status bad = Parse({"--state-sync", "fast"}).status();
  CHECK(bad.details().Find("flag")->as_string() == "state-sync");
  CHECK(bad.message() == "--state-sync: \"fast\" is not one of none, batch, always");
}
