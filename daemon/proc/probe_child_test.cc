#include "proc/probe_child.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>

#include "proc/child_side.h"
#include "proc/raw_syscall.h"

namespace agentd {
namespace {

// Child side: does the kept path exist? (A plain pointer: the child may
// call no instrumented code, std::string's accessors included.)
AGENTD_CHILD_SIDE int Exists(const void* path) {
  return static_cast<int>(-RawSyscall(SYS_faccessat, AT_FDCWD, reinterpret_cast<long>(path), F_OK));
}

TEST_CASE(
    "a probe child answers its step's errno from what Keep kept, after the caller's copy is gone",
    "[probe_child]") {
  ProbeChildren probes;
  size_t here, missing;
  {
    std::string self = "/proc/self/exe";
    std::string none = "/proc/self/no-such-file";
    here = probes.Start(Exists, probes.Keep(self)->c_str());
    missing = probes.Start(Exists, probes.Keep(none)->c_str());
    self.assign(self.size(), 'x');  // the caller's copies change and go
    none.assign(none.size(), 'x');
  }
  probes.WaitAll();
  std::string why;
  CHECK(probes.Outcome(here, &why) == 0);
  CHECK(probes.Outcome(missing, &why) == ENOENT);
}

TEST_CASE("a probe known without a child answers what it was settled with", "[probe_child]") {
  ProbeChildren probes;
  size_t i = probes.Settled(-1, "no child");
  probes.WaitAll();
  std::string why;
  CHECK(probes.Outcome(i, &why) == -1);
  CHECK(why == "no child");
}

}  // namespace
}  // namespace agentd
