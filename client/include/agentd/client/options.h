// Client options: where the daemon is, how to authenticate, and the bounds
// every call runs within.
//
// URLs: "http://HOST:PORT" (numeric address or a name resolved once per
// connect), "unix:/path/to/socket", "vsock:CID:PORT".
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "agentd/protocol/status.h"

namespace agentd::client {

struct Endpoint {
  enum class Kind { kTcp, kUnix, kVsock };
  Kind kind = Kind::kTcp;
  std::string host;   // kTcp
  uint16_t port = 0;  // kTcp
  std::string path;   // kUnix
  uint32_t cid = 0;   // kVsock
  uint32_t vsock_port = 0;
  std::string url;  // as given

  // The Host header to send.
  std::string HostHeader() const;
};

// invalid_request for anything else.
Result<Endpoint> ParseUrl(std::string_view url);

struct ClientOptions {
  std::string url = "http://127.0.0.1:7700";
  std::string token;  // bearer token; empty sends no Authorization header

  std::chrono::milliseconds connect_timeout{std::chrono::seconds(5)};
  // One attempt of one request (a long poll or stream adds its own wait).
  std::chrono::milliseconds request_timeout{std::chrono::seconds(60)};
  // Attempts of an idempotent call (transport failures and retryable 5xx).
  int max_attempts = 6;
  // Jittered exponential backoff between attempts and stream reconnects.
  std::chrono::milliseconds backoff_initial{std::chrono::milliseconds(50)};
  std::chrono::milliseconds backoff_max{std::chrono::seconds(2)};
  // A stream gives up after this many reconnects in a row that received
  // nothing (any delivered event resets the count).
  int max_stream_reconnects = 20;
  // Idle keep-alive connections kept for reuse.
  size_t max_idle_connections = 8;
};

}  // namespace agentd::client
