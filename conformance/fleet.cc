#include "fleet.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <regex>
#include <sstream>

extern char** environ;

namespace agentd::conformance {
namespace {

constexpr size_t kMaxFailLines = 20;  // per failed guest, below its row

struct Running {
  Target target;
  int output_fd = -1;  // the child's stdout and stderr (a memfd)
  std::chrono::steady_clock::time_point start;
};

std::string ReadAll(int fd) {
  std::string out;
  char buf[65536];
  ::lseek(fd, 0, SEEK_SET);
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Starts one child; -1 with errno when it cannot.
pid_t Launch(const Target& t, const FleetOptions& o, int output_fd) {
  std::vector<std::string> args = {o.self, "--url", t.url, "--token-file", t.token_file};
  args.insert(args.end(), o.suite_args.begin(), o.suite_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, output_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, output_fd, 2);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, o.self.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  return pid;
}

// The lines of a failed guest's output worth showing: its FAIL lines, else
// its error lines (an unreadable token file), else its last lines (a crash).
std::vector<std::string> Evidence(const std::string& output) {
  std::vector<std::string> lines, fails, errors;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("FAIL", 0) == 0) fails.push_back(line);
    if (line.rfind("agentd-conformance: ", 0) == 0)
      errors.push_back(line);  // usage, not usage text
    lines.push_back(line);
  }
  if (fails.empty()) fails = errors;
  if (fails.empty()) {
    size_t from = lines.size() > 3 ? lines.size() - 3 : 0;
    fails.assign(lines.begin() + static_cast<long>(from), lines.end());
  }
  if (fails.size() > kMaxFailLines) fails.resize(kMaxFailLines);
  return fails;
}

}  // namespace

Result<std::vector<Target>> ParseTargets(std::string_view text) {
  std::vector<Target> out;
  std::istringstream in{std::string(text)};
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    Target t;
    std::string extra;
    if (!(fields >> t.url)) continue;  // blank or a comment
    if (!(fields >> t.token_file) || (fields >> extra)) {
      return Status::InvalidRequest("line " + std::to_string(number) +
                                    ": expected \"URL TOKEN-FILE\", got \"" + line + "\"");
    }
    t.line = number;
    out.push_back(std::move(t));
  }
  if (out.empty()) return Status::InvalidRequest("no targets (one \"URL TOKEN-FILE\" a line)");
  return out;
}

bool ParseSummary(std::string_view output, SuiteCounts* counts) {
  static const std::regex summary(R"(^(\d+) passed, (\d+) failed(, (\d+) skipped)?$)");
  bool found = false;
  std::istringstream in{std::string(output)};
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, summary)) continue;
    counts->passed = std::stoi(m[1]);
    counts->failed = std::stoi(m[2]);
    counts->skipped = m[4].matched ? std::stoi(m[4]) : 0;
    found = true;
  }
  return found;
}

int RunFleet(const std::vector<Target>& targets, const FleetOptions& options) {
  std::map<pid_t, Running> running;
  size_t next = 0;
  int passed = 0, failed = 0, skipped = 0;
  auto start_wall = std::chrono::steady_clock::now();
  auto report = [&](const Running& r, int status) {
    std::string output = ReadAll(r.output_fd);
    ::close(r.output_fd);
    long long ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - r.start)
                       .count();
    SuiteCounts counts;
    bool summarized = ParseSummary(output, &counts);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const char* verdict = "failed";
    if (code == 0) {
      verdict = "passed";
    } else if (summarized && counts.failed == 0 && counts.passed == 0 && counts.skipped > 0) {
      verdict = "skipped";  // the guest lacks what every selected check needs
    }
    std::string detail;
    if (summarized) {
      detail = std::to_string(counts.passed) + " passed, " + std::to_string(counts.failed) +
               " failed, " + std::to_string(counts.skipped) + " skipped";
    } else if (WIFSIGNALED(status)) {
      detail = std::string("checker killed by signal ") + ::strsignal(WTERMSIG(status));
    } else {
      detail = "no report (exit status " + std::to_string(code) + ")";
    }
    std::printf("%-7s  %s  %s (%lld ms)\n", verdict, r.target.url.c_str(), detail.c_str(), ms);
    if (std::strcmp(verdict, "failed") == 0) {
      ++failed;
      for (const std::string& line : Evidence(output)) std::printf("         | %s\n", line.c_str());
    } else if (std::strcmp(verdict, "skipped") == 0) {
      ++skipped;
    } else {
      ++passed;
    }
    std::fflush(stdout);
  };

  while (next < targets.size() || !running.empty()) {
    while (next < targets.size() && running.size() < static_cast<size_t>(options.parallel)) {
      const Target& t = targets[next++];
      Running r{t, ::memfd_create("agentd-conformance-guest", MFD_CLOEXEC),
                std::chrono::steady_clock::now()};
      pid_t pid = r.output_fd < 0 ? -1 : Launch(t, options, r.output_fd);
      if (pid < 0) {
        std::printf("%-7s  %s  cannot start a checker: %s\n", "failed", t.url.c_str(),
                    std::strerror(errno));
        if (r.output_fd >= 0) ::close(r.output_fd);
        ++failed;
        continue;
      }
      running.emplace(pid, std::move(r));
    }
    if (running.empty()) break;
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      std::perror("agentd-conformance: waitpid");
      return 1;
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;
    report(it->second, status);
    running.erase(it);
  }
  long long total_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - start_wall)
                           .count();
  std::printf("guests: %d passed, %d failed, %d skipped of %zu (%lld ms, %d at a time)\n", passed,
              failed, skipped, targets.size(), total_ms, options.parallel);
  return failed == 0 ? 0 : 1;
}

}  // namespace agentd::conformance
