// HttpServer: listeners, accept loops and the set of open connections.
//
// Listen() binds one address (TCP, Unix, vsock) and starts accepting on the
// io_context. Beyond max_connections a new connection is answered 503
// too_many_connections and closed. Shutdown() starts the drain: idle
// connections close at once, busy ones after their request (or `grace`),
// then `done` runs. The listeners stay open until the daemon exits, so
// probes keep getting answers while it drains (health says "draining");
// a connection accepted then serves one request and closes. All methods
// run on the io thread.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "server/connection.h"
#include "server/limits.h"
#include "server/listen_address.h"

namespace agentd {

class HttpServer : public ConnectionRegistry {
 public:
  HttpServer(asio::io_context& io, ServerLimits limits, RequestHandler handler);
  ~HttpServer() override;

  Status Listen(const ListenAddress& address);
  // An upgrade in place (docs/OPERATIONS.md): the listening descriptors,
  // in Listen() order, and the next binary serving one it inherited.
  std::vector<int> ListenerFds() const;
  Status Adopt(const ListenAddress& address, int fd);
  // Every connection waiting for a request head (Connection::WaitingHead()),
  // as handed-stream entries of kind "connection" (server/handed_streams.h)
  // with their descriptors appended to `fds`; and the next binary serving
  // one as if nothing happened (server/connection_handover.cc).
  json::Array HandOverWaiting(std::vector<int>& fds) const;
  Status AdoptConnection(const json::Value& entry);
  // While an upgrade is pending (ConnectionRegistry::handing_over()).
  // Turned on, it stops the reads idle connections wait with
  // (Connection::StopFirstRead()); once their completions ran,
  // FirstReadsSettled(), and every byte read is in a head HandOverWaiting()
  // reports. No new such read starts while it is on.
  void SetHandingOver(bool on);
  bool FirstReadsSettled() const;
  bool handing_over() const override { return handing_over_; }
  void Shutdown(std::chrono::milliseconds grace, std::function<void()> done);
  // The end of a drain: no more connections.
  void StopListening();

  // Closes every open connection but `keep` (a guest reset ends the last
  // tenant's streams, tunnels and waits).
  void CloseAllBut(const Connection* keep);

  size_t connection_count() const { return connections_.size(); }
  uint64_t connections_accepted() const { return next_id_ - 1; }
  const ServerLimits& limits() const { return limits_; }

  void Remove(uint64_t id) override;

 private:
  asio::awaitable<void> AcceptLoop(std::shared_ptr<Acceptor> acceptor, ListenAddress address);
  void Refuse(Socket socket);
  void Serve(std::shared_ptr<Acceptor> acceptor, const ListenAddress& address);

  asio::io_context& io_;
  ServerLimits limits_;
  RequestHandler handler_;
  std::vector<std::shared_ptr<Acceptor>> acceptors_;
  std::vector<std::string> unix_paths_;
  std::unordered_map<uint64_t, std::weak_ptr<Connection>> connections_;
  uint64_t next_id_ = 1;
  bool stopping_ = false;
  bool handing_over_ = false;
  std::unordered_set<uint64_t> draining_;  // busy at Shutdown(), not yet closed
  std::unique_ptr<asio::steady_timer> grace_timer_;
};

}  // namespace agentd
