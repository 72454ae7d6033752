#include "upgrade/upgrade_command.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "agentd/protocol/json.h"
#include "sys/read_file.h"
#include "upgrade/upgrader.h"

namespace agentd {
namespace {

// The daemon checks the new binary (at most 30 s) and restarts on it; a
// pending upgrade first waits up to its --upgrade-wait-ms, which it names.
constexpr std::chrono::seconds kOutcomeLimit{60};

int Fail(const std::string& message) {
  std::fprintf(stderr, "agentd --upgrade: %s\n", message.c_str());
  return 2;
}

std::string FindStateDir(const std::string& given) {
  if (!given.empty()) return given;
  std::vector<std::string> candidates = {"/run/agentd"};
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg == '/') {
    candidates.push_back(std::string(xdg) + "/agentd");
  }
  for (const std::string& dir : candidates) {
    if (::access(PidFilePath(dir).c_str(), F_OK) == 0) return dir;
  }
  return candidates.front();
}

// The status document, or null when there is none yet.
json::Value ReadStatus(const std::string& dir) {
  Result<std::string> text = ReadFileToString(UpgradeStatusPath(dir), 64 * 1024);
  if (!text.ok()) return json::Value();
  Result<json::Value> doc = json::Parse(*text);
  return doc.ok() ? std::move(*doc) : json::Value();
}

int64_t AttemptOf(const json::Value& status) {
  const json::Value* a = status.Find("attempt");
  return a && a->is_int() ? a->as_int() : 0;
}

}  // namespace

int RunUpgradeCommand(const std::string& state_dir) {
  std::string dir = FindStateDir(state_dir);
  Result<std::string> pid_text = ReadFileToString(PidFilePath(dir), 256);
  if (!pid_text.ok()) {
    return Fail("no running daemon found: " + pid_text.status().message() +
                " (give the daemon's --state-dir)");
  }
  long long pid = 0;
  unsigned long long start = 0;
  // A third field names the signal (PID 1 mode: upgrader.h); without it,
  // SIGUSR2, which every daemon that writes two fields handles.
  int signal = SIGUSR2;
  // Parsed with strtoll and strtoull, not sscanf: sscanf links glibc's
  // scanf engine and its float parsers, about 76 KB of the static daemon
  // (docs/BUILDING.md, "Binary size").
  const char* text = pid_text->c_str();
  char* end = nullptr;
  int fields = 0;
  errno = 0;
  pid = std::strtoll(text, &end, 10);
  if (end != text && errno == 0) {
    ++fields;
    text = end;
    start = std::strtoull(text, &end, 10);
    if (end != text && errno == 0) {
      ++fields;
      text = end;
      long third = std::strtol(text, &end, 10);
      if (end != text) {
        ++fields;
        signal = errno == 0 && third > 0 && third < NSIG ? static_cast<int>(third) : 0;
      }
    }
  }
  if (fields < 2 || pid <= 0 || signal <= 0 || signal >= NSIG) {
    return Fail("the pid file " + PidFilePath(dir) + " is malformed");
  }
  if (ProcessStartTime(static_cast<pid_t>(pid)) != start) {
    return Fail("the daemon of " + PidFilePath(dir) + " (pid " + std::to_string(pid) +
                ") is no longer running");
  }
  int64_t before = AttemptOf(ReadStatus(dir));
  if (::kill(static_cast<pid_t>(pid), signal) != 0) {
    return Fail("cannot signal pid " + std::to_string(pid) + ": " + std::strerror(errno));
  }
  auto asked = std::chrono::steady_clock::now();
  auto deadline = asked + kOutcomeLimit;
  std::string waiting_for;
  while (std::chrono::steady_clock::now() < deadline) {
    json::Value status = ReadStatus(dir);
    const json::Value* pending = status.Find("pending_attempt");
    if (AttemptOf(status) <= before && pending && pending->is_int() && pending->as_int() > before) {
      // Pending: the daemon waits for work in progress to end (its
      // "attempt" still the last outcome's). Said once per thing.
      const json::Value* what = status.Find("waiting_for");
      const json::Value* limit = status.Find("wait_limit_ms");
      if (what && what->is_string() && what->as_string() != waiting_for) {
        waiting_for = what->as_string();
        std::fprintf(stderr, "agentd --upgrade: pending, waiting for %s\n", waiting_for.c_str());
      }
      if (limit && limit->is_int() && limit->as_int() > 0) {
        deadline =
            std::max(deadline, asked + std::chrono::milliseconds(limit->as_int()) + kOutcomeLimit);
      }
    }
    if (AttemptOf(status) > before) {
      std::printf("%s\n", json::Serialize(status).c_str());
      const json::Value* ok = status.Find("ok");
      if (ok && ok->is_bool() && ok->as_bool()) return 0;
      const json::Value* error = status.Find("error");
      std::fprintf(stderr, "agentd --upgrade: failed, the daemon serves on: %s\n",
                   error && error->is_string() ? error->as_string().c_str() : "unknown");
      return 1;
    }
    if (ProcessStartTime(static_cast<pid_t>(pid)) != start) {
      std::fprintf(stderr, "agentd --upgrade: the daemon (pid %lld) exited during the upgrade\n",
                   pid);
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::fprintf(stderr, "agentd --upgrade: no outcome within %lld s\n",
               static_cast<long long>(kOutcomeLimit.count()));
  return 1;
}

}  // namespace agentd
