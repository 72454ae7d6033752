#include <catch2/catch.hpp>

#include "auth/bootstrap_state.h"

using namespace agentd;

TEST_CASE("constant-time compare agrees with equality", "[auth]") {
  CHECK(ConstantTimeEquals("secret", "secret"));
  CHECK_FALSE(ConstantTimeEquals("secreT", "secret"));
  CHECK_FALSE(ConstantTimeEquals("secret-longer", "secret"));
  CHECK_FALSE(ConstantTimeEquals("sec", "secret"));
  CHECK_FALSE(ConstantTimeEquals("", "secret"));
}

TEST_CASE("bootstrap: first writer wins, same token replays, other token conflicts", "[auth]") {
  BootstrapState state;
  CHECK(state.Authorize(nullptr).code() == ErrorCode::kNotBootstrapped);
  CHECK(state.Bootstrap({"tok", {{"A", "1"}}}) == BootstrapState::Outcome::kAccepted);
  CHECK(state.Bootstrap({"tok", {{"B", "2"}}}) == BootstrapState::Outcome::kReplayed);
  CHECK(state.launch_env() == EnvList{{"A", "1"}});
  CHECK(state.Bootstrap({"other", {}}) == BootstrapState::Outcome::kConflict);
}

TEST_CASE("authorize accepts only the bearer token", "[auth]") {
  BootstrapState state;
  state.SetToken("tok");
  std::string good = "Bearer tok", lower = "bearer tok", wrong = "Bearer tok2", basic = "Basic tok";
  CHECK(state.Authorize(&good).ok());
  CHECK(state.Authorize(&lower).ok());
  CHECK(state.Authorize(&wrong).code() == ErrorCode::kUnauthorized);
  CHECK(state.Authorize(&basic).code() == ErrorCode::kUnauthorized);
  CHECK(state.Authorize(nullptr).code() == ErrorCode::kUnauthorized);
}
