#include "exec/runtime_self_test.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentd/protocol/runtime.h"
#include "log/log.h"
#include "proc/signals.h"
#include "proc/spawn.h"
#include "sys/pipe.h"

namespace agentd {
namespace {

// Enough verdicts for every interpreter of a few request PATHs; beyond
// it a new interpreter is not tested (and counts as present).
constexpr size_t kMaxVerdicts = 64;
// Of the test's output, what is read: a pipe's default buffer holds more.
constexpr size_t kMaxOutput = 4096;
constexpr char kExpected[] = "42";

std::string SelfTestCode(Runtime r) {
  switch (r) {
    case Runtime::kShell:
      return "echo $((6*7))";
    case Runtime::kPython:
      return "print(6*7)";
    case Runtime::kTs:
      return "console.log(6*7)";
  }
  return "";
}

std::string ReadAvailable(int fd) {
  std::string out;
  char buf[1024];
  while (out.size() < kMaxOutput) {
    ssize_t n = ::read(fd, buf, std::min(sizeof buf, kMaxOutput - out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::string Trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// The last non-empty line (where interpreters put the error itself), cut.
std::string LastLine(const std::string& s) {
  std::string t = Trimmed(s);
  size_t nl = t.find_last_of('\n');
  std::string line = Trimmed(nl == std::string::npos ? t : t.substr(nl + 1));
  if (line.size() > 200) line = line.substr(0, 200) + "...";
  return line;
}

}  // namespace

struct RuntimeSelfTests::Running {
  explicit Running(asio::io_context& io) : timer(io) {}
  RuntimeCheck::Identity identity;  // of the file under test
  pid_t pid = -1;
  UniqueFd out, err;
  std::string spawn_error;
  bool timed_out = false;
  std::chrono::steady_clock::time_point started;
  asio::steady_timer timer;
};

RuntimeSelfTests::RuntimeSelfTests(asio::io_context& io, Reaper& reaper,
                                   std::function<std::vector<std::string>()> child_env,
                                   std::optional<struct rlimit> nofile)
    : io_(io), reaper_(reaper), child_env_(std::move(child_env)), nofile_(nofile) {}

std::string_view RuntimeSelfTests::StateName(State s) {
  switch (s) {
    case State::kPending:
      return "pending";
    case State::kPassed:
      return "passed";
    case State::kFailed:
      return "failed";
  }
  return "pending";
}

void RuntimeSelfTests::Apply(RuntimeCheck& check) {
  if (!check.ok() || check.program_path.empty()) return;
  auto it = verdicts_.find(check.program_path);
  if (it == verdicts_.end()) {
    if (verdicts_.size() >= kMaxVerdicts || stopped_) return;
    it = verdicts_.emplace(check.program_path, Verdict{}).first;
    ++changes_;
    it->second.identity = check.identity;
    it->second.identity.dev = ~check.identity.dev;  // differs: tested below
  }
  Verdict& v = it->second;
  if (v.identity != check.identity) {
    v = Verdict{check.runtime, check.program_path, check.identity, State::kPending, "", 0};
    ++changes_;
    // A test of the file's former contents finishes first and then sees
    // that it is stale (Finish); otherwise one starts after this call.
    if (running_.count(check.program_path) == 0 && !stopped_) {
      running_.emplace(check.program_path, nullptr);
      asio::post(io_, [this, path = check.program_path] { Start(path); });
    }
  }
  if (v.state == State::kFailed) {
    check.code = "self_test_failed";
    check.reason = v.reason;
  }
}

std::vector<RuntimeSelfTests::Verdict> RuntimeSelfTests::Verdicts() const {
  std::vector<Verdict> out;
  for (const auto& [path, v] : verdicts_) out.push_back(v);
  return out;
}

void RuntimeSelfTests::Stop() {
  stopped_ = true;
  for (auto& [path, running] : running_) {
    if (running && running->pid > 0) ::kill(-running->pid, SIGKILL);
  }
}

void RuntimeSelfTests::Start(const std::string& path) {
  auto verdict = verdicts_.find(path);
  if (stopped_ || verdict == verdicts_.end()) {
    running_.erase(path);
    return;
  }
  auto running = std::make_shared<Running>(io_);
  running_[path] = running;
  running->identity = verdict->second.identity;
  running->started = std::chrono::steady_clock::now();
  auto fail_now = [&](std::string why) {
    running_.erase(path);
    ++changes_;
    verdict->second.state = State::kFailed;
    verdict->second.reason = std::string(RuntimeProgram(verdict->second.runtime)) + " (" + path +
                             ") could not be started for its self-test: " + why;
  };
  Result<UniqueFd> null_in = AboveStdio(UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC)));
  Result<Pipe> out = MakePipe(/*nonblocking_read=*/true, false);
  Result<Pipe> err = MakePipe(/*nonblocking_read=*/true, false);
  if (!null_in.ok() || !out.ok() || !err.ok()) {
    return fail_now("cannot make its pipes (daemon out of descriptors?)");
  }
  SpawnSpec spec;
  spec.argv = RuntimeArgv(verdict->second.runtime, SelfTestCode(verdict->second.runtime));
  spec.argv[0] = path;
  spec.env = child_env_();
  spec.cwd = "/";
  spec.stdin_fd = null_in->get();
  spec.stdout_fd = out->write.get();
  spec.stderr_fd = err->write.get();
  spec.nofile = nofile_;
  Result<SpawnResult> spawned = Spawn(spec);
  if (!spawned.ok()) return fail_now(spawned.status().message());
  running->pid = spawned->pid;
  running->spawn_error = spawned->error != 0 ? spawned->reason : "";
  running->out = std::move(out->read);
  running->err = std::move(err->read);
  reaper_.Watch(running->pid, [this, path](int status) { Finish(path, status); });
  running->timer.expires_after(kTimeout);
  running->timer.async_wait([weak = std::weak_ptr<Running>(running)](const asio::error_code& ec) {
    std::shared_ptr<Running> r = weak.lock();
    if (ec || !r) return;
    r->timed_out = true;
    ::kill(-r->pid, SIGKILL);
  });
}

void RuntimeSelfTests::Finish(const std::string& path, int status) {
  auto found = running_.find(path);
  if (found == running_.end() || !found->second) return;
  std::shared_ptr<Running> r = std::move(found->second);
  running_.erase(found);
  r->timer.cancel();
  ::kill(-r->pid, SIGKILL);  // anything it left in its group
  auto verdict = verdicts_.find(path);
  if (verdict == verdicts_.end()) return;
  Verdict& v = verdict->second;
  if (v.identity != r->identity) {  // the file changed while it ran: test the new one
    if (!stopped_) {
      running_.emplace(path, nullptr);
      asio::post(io_, [this, path] { Start(path); });
    }
    return;
  }
  ++changes_;  // passed or failed below
  v.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - r->started)
                      .count();
  std::string out = ReadAvailable(r->out.get());
  std::string err = ReadAvailable(r->err.get());
  bool exited = WIFEXITED(status);
  if (!r->timed_out && exited && WEXITSTATUS(status) == 0 && Trimmed(out) == kExpected) {
    v.state = State::kPassed;
    return;
  }
  std::string code = SelfTestCode(v.runtime);
  std::string why;
  if (r->timed_out) {
    why = "did not finish within " + std::to_string(kTimeout.count()) + " s and was killed";
  } else if (!r->spawn_error.empty()) {
    why = "could not be run: " + r->spawn_error;
  } else if (!exited) {
    why = "was killed by signal " + SignalName(WTERMSIG(status));
  } else if (WEXITSTATUS(status) != 0) {
    why = "exited " + std::to_string(WEXITSTATUS(status));
  } else {
    std::string got = LastLine(out);
    why = got.empty() ? std::string("printed nothing")
                      : "printed \"" + got + "\" where " + kExpected + " was expected";
  }
  if (std::string last = LastLine(err); !last.empty() && r->spawn_error.empty()) {
    why += "; stderr: " + last;
  }
  v.state = State::kFailed;
  v.reason = std::string(RuntimeProgram(v.runtime)) + " (" + path + ") failed its self-test (" +
             code + "): it " + why;
  Log(LogLevel::kWarn, "runtime self-test failed",
      json::Object().Set("runtime", std::string(RuntimeName(v.runtime))).Set("reason", v.reason));
}

}  // namespace agentd
