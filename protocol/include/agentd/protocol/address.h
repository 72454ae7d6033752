// Addresses of a daemon: where it listens (agentd --listen) and where a
// client reaches it (ClientOptions::url, AGENTD_URL). One parser of the
// parts (ports, unix socket paths, bracketed IPv6 hosts, vsock numbers)
// serves both spellings:
//
//   listen:  "HOST:PORT" (HOST a numeric address, "[IPv6]", "localhost"
//            or empty for every IPv4 address; PORT 0 picks a free one),
//            "unix:/path", "vsock:PORT"
//   URL:     "http://HOST[:PORT][/]" (PORT 1-65535, default 80; HOST may
//            be a name), "unix:[//]/path", "vsock:[//]CID:PORT"
//
// Pure parsing, no name resolution: whether a listen HOST is a numeric
// address is the listener's check. Anything else is 400 invalid_request
// saying why (a URL's error also names it as `url`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "agentd/protocol/status.h"

namespace agentd {

// sockaddr_un's path holds 108 bytes with the terminating NUL.
inline constexpr size_t kMaxUnixSocketPathBytes = 107;

struct Address {
  enum class Kind { kTcp, kUnix, kVsock };
  Kind kind = Kind::kTcp;
  std::string host;   // kTcp: without brackets
  uint32_t port = 0;  // kTcp (at most 65535), kVsock
  std::string path;   // kUnix
  uint32_t cid = 0;   // kVsock, URLs only
};

Result<Address> ParseListenAddress(std::string_view text);
Result<Address> ParseDaemonUrl(std::string_view url);

}  // namespace agentd
