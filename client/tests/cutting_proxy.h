// CuttingProxy: a TCP proxy between a client under test and a daemon that
// drops connections on purpose. Each accepted connection is forwarded to
// the daemon; the policy decides after how many daemon-to-client bytes the
// connection is cut (both directions closed). Runs on its own thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>

namespace agentd::testing {

class CuttingProxy {
 public:
  // `cut_after(n)` is asked once per connection (n = 0, 1, 2, ...) and
  // returns the daemon-to-client bytes to forward before cutting, or
  // UINT64_MAX to never cut.
  CuttingProxy(int daemon_port, std::function<uint64_t(int connection)> cut_after);
  ~CuttingProxy();

  int port() const { return port_; }
  int connections() const { return connections_.load(); }
  int cuts() const { return cuts_.load(); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::atomic<int> connections_{0};
  std::atomic<int> cuts_{0};
  std::thread thread_;
};

}  // namespace agentd::testing
