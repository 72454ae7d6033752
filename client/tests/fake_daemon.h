// FakeDaemon: answers every request on a loopback port with one canned
// HTTP response, to show what the client does with answers a real daemon
// would never give (hostile archives, garbage). Runs on its own thread.
#pragma once

#include <memory>
#include <string>
#include <thread>

namespace agentd::testing {

class FakeDaemon {
 public:
  explicit FakeDaemon(std::string response);
  ~FakeDaemon();
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::thread thread_;
};

// An HTTP/1.1 200 response carrying `body` as application/x-tar.
std::string TarResponse(const std::string& body);

}  // namespace agentd::testing
