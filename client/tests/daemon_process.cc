#include "daemon_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "agentd/protocol/json.h"
#include "agentd/protocol/status.h"

extern char** environ;

namespace agentd::testing {
namespace {

std::string DaemonBinary() {
  const char* env = std::getenv("AGENTD_BIN");
  return env ? env : AGENTD_TEST_DAEMON;
}

}  // namespace

DaemonProcess::DaemonProcess(std::vector<std::string> extra_flags, bool bootstrap)
    : flags_(std::move(extra_flags)) {
  char tmpl[] = "/tmp/agentd-client-test-XXXXXX";
  dir_ = mkdtemp(tmpl);
  if (bootstrap) {
    std::string token_path = dir_ + "/token";
    int fd = ::open(token_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ssize_t n = ::write(fd, token_.data(), token_.size());
    (void)n;
    ::close(fd);
    flags_.push_back("--token-file");
    flags_.push_back(token_path);
  }
  Start();
}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    int status;
    ::waitpid(pid_, &status, 0);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void DaemonProcess::Start() {
  std::vector<std::string> args = {DaemonBinary(), "--state-dir", dir_ + "/state", "--listen",
                                   port_ ? "127.0.0.1:" + std::to_string(port_) : "127.0.0.1:0"};
  args.insert(args.end(), flags_.begin(), flags_.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The log goes to a file: a pipe nobody drains would stall the daemon.
  std::string log_path = dir_ + "/agentd.log";
  int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  off_t start = ::lseek(log, 0, SEEK_END);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, log, STDERR_FILENO);
  if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) {
    throw std::runtime_error("cannot start " + args[0]);
  }
  posix_spawn_file_actions_destroy(&actions);
  ::close(log);
  // Read log lines written by this start until "ready"; remember the port.
  int in = ::open(log_path.c_str(), O_RDONLY | O_CLOEXEC);
  ::lseek(in, start, SEEK_SET);
  std::string pending;
  char buf[4096];
  for (int waited_ms = 0;; waited_ms += 5) {
    if (waited_ms > 10000) throw std::runtime_error("agentd was not ready within 10 s");
    int status;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("agentd exited before it was ready: " + pending);
    }
    ssize_t n = ::read(in, buf, sizeof(buf));
    if (n <= 0) {
      ::usleep(5000);
      continue;
    }
    pending.append(buf, static_cast<size_t>(n));
    size_t nl;
    bool ready = false;
    while ((nl = pending.find('\n')) != std::string::npos) {
      Result<json::Value> line = json::Parse(pending.substr(0, nl));
      pending.erase(0, nl + 1);
      if (!line.ok()) continue;
      const json::Value* msg = line->Find("msg");
      if (!msg || !msg->is_string()) continue;
      if (msg->as_string() == "listening" && line->Find("port")) {
        port_ = static_cast<int>(line->Find("port")->as_int());
      }
      if (msg->as_string() == "ready") ready = true;
    }
    if (ready) break;
  }
  ::close(in);
}

void DaemonProcess::Kill() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
}

void DaemonProcess::Restart() {
  Kill();
  Start();
}

}  // namespace agentd::testing
