// Watch and tunnel types of the client library (docs/CLIENT.md, "Watch"
// and "Tunnels").
#pragma once

#include <asio.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/protocol/status.h"

namespace agentd::client {

// One change under a watched directory (docs/PROTOCOL.md, "Watch").
struct FsWatchEvent {
  std::string kind;    // created | modified | removed | renamed | overflow
  std::string path;    // guest path; empty for overflow
  std::string type;    // "dir" or "file"
  std::string from;    // renamed: the old path
  std::string reason;  // overflow: kernel_queue, directory_limit, or reconnected
  uint64_t id = 0;     // increasing within one watch stream
};

struct WatchOptions {
  bool recursive = false;
};

// Callbacks of Watch(); they run on the client's executor.
struct WatchCallbacks {
  // Each event in order. Return false to end the watch (Watch answers ok).
  std::function<bool(const FsWatchEvent&)> on_event;
  // Called once the daemon has placed the watch: changes made after this
  // are reported. (Also after each reconnect.)
  std::function<void()> on_ready;
};

// A listening TCP port in the guest (GET /v1/ports).
struct GuestPort {
  uint16_t port = 0;
  std::string address;  // "127.0.0.1", "0.0.0.0", "::", ...
  std::string family;   // "ipv4" or "ipv6"
};

// A raw byte tunnel to a TCP port in the guest (GET /v1/ports/{port}/connect).
//
// Bytes the daemon relayed before the caller's first read are returned by
// the first reads. Sync calls block the calling thread; the coroutine
// forms run on the executor the tunnel was opened on. Not thread-safe:
// one reader and one writer at a time (they may be different coroutines).
class Tunnel {
 public:
  Tunnel(asio::generic::stream_protocol::socket socket, std::string early)
      : socket_(std::move(socket)), early_(std::move(early)) {}

  // Bytes into `buf`; 0 at the end of the stream (the guest side closed).
  Result<size_t> ReadSome(asio::mutable_buffer buf);
  Status WriteAll(std::string_view bytes);
  asio::awaitable<Result<size_t>> AsyncReadSome(asio::mutable_buffer buf);
  asio::awaitable<Status> AsyncWriteAll(std::string_view bytes);
  // Half-close: the guest side sees the end of its input; reads go on.
  void ShutdownWrite();
  void Close();
  asio::generic::stream_protocol::socket& socket() { return socket_; }

 private:
  size_t TakeEarly(asio::mutable_buffer buf);

  asio::generic::stream_protocol::socket socket_;
  std::string early_;
  size_t early_taken_ = 0;
};

}  // namespace agentd::client
