#include "proc/spawn.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "sys/pipe.h"
#include "testing/temp_dir.h"

using namespace agentd;

namespace {

struct Ran {
  SpawnResult result;
  int exit_code = -1;
  std::string out;
};

// Spawns with stdout on a pipe, collects the output and the exit code.
Ran RunChild(SpawnSpec spec) {
  Result<Pipe> out = MakePipe(false, false);
  REQUIRE(out.ok());
  Result<Pipe> in = MakePipe(false, false);
  REQUIRE(in.ok());
  in->write.reset();
  spec.stdin_fd = in->read.get();
  spec.stdout_fd = out->write.get();
  spec.stderr_fd = out->write.get();
  Result<SpawnResult> r = Spawn(spec);
  REQUIRE(r.ok());
  out->write.reset();
  Ran ran{*r, -1, ""};
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out->read.get(), buf, sizeof(buf))) > 0) ran.out.append(buf, n);
  int status = 0;
  REQUIRE(::waitpid(r->pid, &status, 0) == r->pid);
  ran.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return ran;
}

}  // namespace

TEST_CASE("spawn finds argv[0] in the child's PATH and passes argv and env", "[spawn]") {
  SpawnSpec spec;
  spec.argv = {"sh", "-c", "echo \"$0:$GREETING\"", "zero"};
  spec.env = {"PATH=/nonexistent:/usr/bin:/bin", "GREETING=hi"};
  Ran ran = RunChild(spec);
  CHECK(ran.result.error == 0);
  CHECK(ran.exit_code == 0);
  CHECK(ran.out == "zero:hi\n");
}

TEST_CASE("spawn reports a missing program as ENOENT and exit 127", "[spawn]") {
  SpawnSpec spec;
  spec.argv = {"agentd-no-such-program"};
  spec.env = {"PATH=/bin:/usr/bin"};
  Ran ran = RunChild(spec);
  CHECK(ran.result.error == ENOENT);
  CHECK(ran.result.exit_code == 127);
  CHECK(ran.exit_code == 127);
  CHECK(ran.result.reason == "cannot execute agentd-no-such-program: No such file or directory");
}

TEST_CASE("spawn remembers a non-executable match past later misses: 126", "[spawn]") {
  testing::TempDir dir;
  std::string prog = dir.path() + "/tool";
  std::ofstream(prog) << "#!/bin/sh\necho no\n";
  ::chmod(prog.c_str(), 0644);
  SpawnSpec spec;
  spec.argv = {"tool"};
  spec.env = {"PATH=" + dir.path() + ":/nonexistent"};
  Ran ran = RunChild(spec);
  CHECK(ran.result.error == EACCES);
  CHECK(ran.exit_code == 126);
  CHECK(ran.result.reason == "cannot execute " + prog + ": Permission denied");
}

TEST_CASE("spawn reports a bad cwd as a failed step", "[spawn]") {
  SpawnSpec spec;
  spec.argv = {"/bin/true"};
  spec.cwd = "/nonexistent-agentd-dir";
  Ran ran = RunChild(spec);
  CHECK(ran.result.error == ENOENT);
  CHECK(ran.exit_code == 127);
  CHECK(ran.result.reason ==
        "cannot change directory to /nonexistent-agentd-dir: No such file or directory");
}

TEST_CASE("spawn gives the child an empty mask and default dispositions", "[spawn]") {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  ::pthread_sigmask(SIG_BLOCK, &block, &old);
  auto previous = ::signal(SIGUSR2, SIG_IGN);
  SpawnSpec spec;
  spec.argv = {"/bin/grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"};
  Ran ran = RunChild(spec);
  ::signal(SIGUSR2, previous);
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  CHECK(ran.out == "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
}

TEST_CASE("spawn puts the child in its own session and closes other descriptors", "[spawn]") {
  int stray = ::dup(STDERR_FILENO);  // not close-on-exec: close_range must catch it
  SpawnSpec spec;
  spec.argv = {"/bin/sh", "-c", "ls /proc/$$/fd; ps -o sid= -p $$; echo $$"};
  Ran ran = RunChild(spec);
  ::close(stray);
  std::vector<std::string> words;
  std::string w;
  for (char c : ran.out + " ") {
    if (c == ' ' || c == '\n') {
      if (!w.empty()) words.push_back(w);
      w.clear();
    } else {
      w += c;
    }
  }
  REQUIRE(words.size() == 5);
  CHECK(words[0] == "0");
  CHECK(words[1] == "1");
  CHECK(words[2] == "2");
  CHECK(words[3] == words[4]);  // session id == the child's pid
}
