// BusyReason: something in progress that an upgrade in place cannot hand
// over midway (docs/OPERATIONS.md, "Upgrading"), as the layers that own it
// describe it. Here, at the bottom, so the engine, the contexts, the server
// and the upgrader speak of it alike without reaching up to each other.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace agentd {

struct BusyReason {
  // What, for an operator: "the request POST /v1/run", "exec \"x\" is
  // being launched".
  std::string what;
  // When it began, when known: the refusal says for how long.
  std::optional<std::chrono::steady_clock::time_point> since;
  // Ends by itself soon (a run answers, a launch completes): an upgrade
  // waits for it. Otherwise (a stop, output lost to a disk error) the
  // upgrade is refused at once.
  bool transient = true;
};

}  // namespace agentd
