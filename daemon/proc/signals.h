// Signal names as the wire spells them ("TERM", docs/PROTOCOL.md, "Kill")
// and the numbers of this platform. Pure functions; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace agentd {

// "TERM", "SIGTERM", "term" -> SIGTERM. Also "RTMIN", "RTMIN+N", "RTMAX-N".
// nullopt for anything else (numbers are not accepted: they differ between
// architectures, names do not).
std::optional<int> SignalFromName(std::string_view name);
// SIGTERM -> "TERM"; a realtime signal -> "RTMIN+N"; unknown -> "SIG<n>".
std::string SignalName(int signo);

}  // namespace agentd
