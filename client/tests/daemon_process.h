// DaemonProcess: a real agentd for client tests, started from the binary
// this build produced, on an ephemeral loopback port with its own state
// directory; bootstrapped with a fixed token unless asked not to.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "agentd/client/options.h"

namespace agentd::testing {

class DaemonProcess {
 public:
  explicit DaemonProcess(std::vector<std::string> extra_flags = {}, bool bootstrap = true);
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  const std::string& token() const { return token_; }
  const std::string& dir() const { return dir_; }
  pid_t pid() const { return pid_; }
  // Options that reach this daemon, with the library's defaults otherwise.
  client::ClientOptions client_options() const {
    client::ClientOptions o;
    o.url = url();
    o.token = token_;
    return o;
  }
  // SIGKILL then start again on the same state directory (and port).
  void Restart();
  void Kill();

 private:
  void Start();

  std::vector<std::string> flags_;
  std::string dir_;
  std::string token_ = "client-test-token";
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace agentd::testing
