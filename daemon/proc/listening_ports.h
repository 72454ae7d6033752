// The TCP ports listening in the guest, from /proc/net/tcp and tcp6
// (docs/PROTOCOL.md, "Ports"). Reading procfs needs no privileges and no
// tools in the image; sockets of other network namespaces are not seen.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace agentd {

struct ListeningPort {
  uint16_t port = 0;
  std::string address;  // "127.0.0.1", "0.0.0.0", "::", "::1", ...
  std::string family;   // "ipv4" or "ipv6"
};

// The LISTEN rows of one /proc/net/tcp{,6} text ("ipv4" or "ipv6"),
// skipping malformed lines.
std::vector<ListeningPort> ParseProcNetTcp(std::string_view text, std::string_view family);

// Both tables, sorted by port then address, without duplicates. Missing
// tables (no IPv6, no procfs) contribute nothing.
std::vector<ListeningPort> ListListeningPorts();

}  // namespace agentd
