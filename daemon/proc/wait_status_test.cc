#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "proc/signals.h"
#include "proc/wait_status.h"

using namespace agentd;

namespace {

// A real wait status, produced by the kernel rather than built by hand.
int StatusOf(void (*body)()) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    body();
    _exit(99);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return status;
}

}  // namespace

TEST_CASE("wait status: a normal exit keeps its code and names no signal", "[proc]") {
  ExitOutcome zero = DecodeWaitStatus(StatusOf([] { _exit(0); }));
  CHECK(zero.exit_code == 0);
  CHECK_FALSE(zero.signal);
  ExitOutcome three = DecodeWaitStatus(StatusOf([] { _exit(3); }));
  CHECK(three.exit_code == 3);
  CHECK_FALSE(three.signal);
}

TEST_CASE("wait status: death by signal is 128+n with the signal's name", "[proc]") {
  ExitOutcome term = DecodeWaitStatus(StatusOf([] {
    signal(SIGTERM, SIG_DFL);
    raise(SIGTERM);
  }));
  CHECK(term.exit_code == 128 + SIGTERM);
  CHECK(term.signal == "TERM");
  ExitOutcome kill = DecodeWaitStatus(StatusOf([] { raise(SIGKILL); }));
  CHECK(kill.exit_code == 137);
  CHECK(kill.signal == "KILL");
}

TEST_CASE("signal names: with or without SIG, any case; numbers refused", "[proc]") {
  CHECK(SignalFromName("TERM") == SIGTERM);
  CHECK(SignalFromName("SIGKILL") == SIGKILL);
  CHECK(SignalFromName("int") == SIGINT);
  CHECK(SignalFromName("RTMIN+2") == SIGRTMIN + 2);
  CHECK_FALSE(SignalFromName("15"));
  CHECK_FALSE(SignalFromName("TERMINATE"));
  CHECK_FALSE(SignalFromName(""));
  CHECK_FALSE(SignalFromName("RTMIN+99"));
  CHECK(SignalName(SIGTERM) == "TERM");
  CHECK(SignalName(SIGRTMIN + 1) == "RTMIN+1");
  for (int s = 1; s < SIGRTMIN; ++s) {
    if (SignalName(s).starts_with("SIG")) continue;  // glibc-reserved numbers
    CHECK(SignalFromName(SignalName(s)) == s);
  }
}
