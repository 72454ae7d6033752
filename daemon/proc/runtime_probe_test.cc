#include "proc/runtime_probe.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>

#include "testing/temp_dir.h"

using namespace agentd;
using agentd::testing::TempDir;

namespace {

void Install(const TempDir& tmp, const std::string& rel) {
  tmp.Write(rel, "#!/bin/sh\n");
  REQUIRE(::chmod((tmp / rel).c_str(), 0755) == 0);
}

}  // namespace

TEST_CASE("Runtime probe: an unchanged PATH is answered without probing again") {
  TempDir tmp;
  Install(tmp, "bin/sh");
  RuntimeProbe probe;
  std::string path = tmp / "bin";
  CHECK(probe.Present(path) == std::vector<Runtime>{Runtime::kShell});
  CHECK(probe.Present(path) == std::vector<Runtime>{Runtime::kShell});
  CHECK(probe.probes() == 1);
}

TEST_CASE("Runtime probe: an interpreter installed, made non-executable or removed shows at once") {
  TempDir tmp;
  tmp.Mkdir("a");
  tmp.Mkdir("b");
  RuntimeProbe probe;
  std::string path = tmp / "a" + ":" + tmp / "b";
  CHECK(probe.Present(path).empty());
  Install(tmp, "b/python3");
  CHECK(probe.Present(path) == std::vector<Runtime>{Runtime::kPython});
  REQUIRE(::chmod((tmp / "b/python3").c_str(), 0644) == 0);
  CHECK(probe.Present(path).empty());
  Install(tmp, "a/bun");
  CHECK(probe.Present(path) == std::vector<Runtime>{Runtime::kTs});
  REQUIRE(::rename((tmp / "a/bun").c_str(), (tmp / "a/bun.old").c_str()) == 0);
  CHECK(probe.Present(path).empty());
}

TEST_CASE("Runtime probe: a PATH directory created later is seen, and then watched itself") {
  TempDir tmp;
  RuntimeProbe probe;
  std::string path = tmp / "not/yet/bin";
  CHECK(probe.Present(path).empty());
  tmp.Mkdir("not");
  tmp.Mkdir("not/yet");
  tmp.Mkdir("not/yet/bin");
  CHECK(probe.Present(path).empty());
  Install(tmp, "not/yet/bin/sh");
  CHECK(probe.Present(path) == std::vector<Runtime>{Runtime::kShell});
  unsigned long long probes = probe.probes();
  CHECK(probe.Present(path) == std::vector<Runtime>{Runtime::kShell});
  CHECK(probe.probes() == probes);
}

TEST_CASE("Runtime probe: a different PATH, or a relative entry, probes again") {
  TempDir tmp;
  Install(tmp, "one/sh");
  Install(tmp, "two/python3");
  RuntimeProbe probe;
  CHECK(probe.Present(tmp / "one") == std::vector<Runtime>{Runtime::kShell});
  CHECK(probe.Present(tmp / "two") == std::vector<Runtime>{Runtime::kPython});
  CHECK(probe.probes() == 2);
  std::string relative = tmp / "two" + ":relative/bin";
  probe.Present(relative);
  probe.Present(relative);
  CHECK(probe.probes() == 4);
}
