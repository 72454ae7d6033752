// ApiContext: what route handlers share. Built once in main.cc; every
// member outlives the server. Used only on the io thread (except
// `blocking`, the pool for disk-bound work).
#pragma once

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agentd/protocol/bootstrap.h"
#include "agentd/protocol/json.h"
#include "auth/bootstrap_state.h"
#include "config/daemon_config.h"
#include "reuse/guest_reset.h"
#include "server/handed_streams.h"
#include "sys/busy_reason.h"

namespace agentd {

class Connection;

struct ExecCounts {
  bool busy = false;    // some exec's leader process is running
  int64_t records = 0;  // registered exec records of every state
};

// Upgrades in place since the daemon first started (upgrade/upgrader.h).
struct UpgradeCounts {
  int64_t upgrades = 0;
  int64_t failures = 0;
};

// Changes whenever health's runtimes, runtimes_unavailable or
// runtime_self_tests may answer differently (ExecEngine::RuntimeEpochNow).
struct RuntimesEpoch {
  unsigned long long probes = 0;
  uint64_t self_tests = 0;
  bool operator==(const RuntimesEpoch&) const = default;
};

struct ApiContext {
  const DaemonConfig& config;
  BootstrapState& bootstrap;
  asio::thread_pool& blocking;
  std::chrono::steady_clock::time_point started_at = std::chrono::steady_clock::now();
  // Providers for health, set by the components that own the facts.
  std::function<ExecCounts()> exec_counts = [] { return ExecCounts{}; };
  std::function<std::vector<std::string>()> runtimes = [] { return std::vector<std::string>{}; };
  // Each interpreter file's self-test.
  std::function<std::vector<RuntimeSelfTestState>()> runtime_self_tests = [] {
    return std::vector<RuntimeSelfTestState>{};
  };
  std::function<std::vector<RuntimeUnavailable>()> runtimes_unavailable = [] {
    return std::vector<RuntimeUnavailable>{};
  };
  // Health serializes the three lists above again only when this changes;
  // nullopt (no engine) means on every call.
  std::function<std::optional<RuntimesEpoch>()> runtimes_epoch = [] {
    return std::optional<RuntimesEpoch>();
  };
  // Health's "contexts" member: every context, as GET /v1/contexts lists it.
  std::function<json::Array()> contexts = [] { return json::Array(); };
  // Upgrade in place: the idle contexts handed over (run/context_handover.cc),
  // and, in the next binary, the entries to take back before serving.
  std::function<Result<json::Array>(std::vector<int>& fds)> hand_over_contexts = [](auto&) {
    return Result<json::Array>(json::Array());
  };
  json::Array handed_contexts = json::Array();
  // An upgrade that waits (upgrade/upgrader.h): a context with a run in
  // progress or queued; and the upgrade's state for health's "upgrade".
  std::function<std::optional<BusyReason>()> context_blocker = [] {
    return std::optional<BusyReason>();
  };
  std::function<json::Object()> upgrade_state = [] { return json::Object(); };
  // Health's "limits" member: the mechanism in force and what it enforces.
  std::function<json::Object()> limits = [] { return json::Object(); };
  // Health's "profiles" member (docs/SECURITY.md) and whether an exec of
  // this generation ran unrestricted as root.
  std::function<json::Object()> profiles = [] { return json::Object(); };
  std::function<bool()> privileged_generation = [] { return false; };
  // Guest reuse (docs/PROTOCOL.md, "Reuse"): health's generation, boot_id
  // and state. Null only in tests that build no engine.
  GuestReset* reuse = nullptr;
  // Closes every client connection but the given one (set once the server
  // exists).
  std::function<void(const Connection*)> close_all_but = [](const Connection*) {};
  std::function<UpgradeCounts()> upgrades = [] { return UpgradeCounts{}; };
  // SIGTERM arrived and the daemon drains (docs/PROTOCOL.md, "Health"):
  // health answers 503 "draining" and new work is refused until it exits.
  std::function<bool()> draining = [] { return false; };
  // Whether the state directory takes a write (sys/write_probe.h).
  std::function<Status()> state_dir_writable = [] { return Status::Ok(); };
  // Tunnels and watch streams, for an upgrade in place to hand over.
  HandedStreams streams{};
  // Condition waits in progress (api/wait_slot.h).
  int64_t waits_open = 0;
};

std::string_view DaemonVersion();

}  // namespace agentd
