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

TEST_CASE("Runtime probe: Refresh stays equal until a PATH directory changes, then probes") {
  TempDir tmp;
  Install(tmp, "bin/sh");
  RuntimeProbe probe;
  std::string path = tmp / "bin";
  unsigned long long first = probe.Refresh(path);
  CHECK(probe.Refresh(path) == first);
  CHECK(probe.Present(path) == std::vector<Runtime>{Runtime::kShell});
  CHECK(probe.probes() == first);
  Install(tmp, "bin/python3");
  unsigned long long after = probe.Refresh(path);
  CHECK(after == first + 1);
  // The change was consumed by Refresh: the answer is the new one, unprobed.
  CHECK(probe.Present(path) == std::vector<Runtime>{Runtime::kShell, Runtime::kPython});
  CHECK(probe.Refresh(path) == after);
}

TEST_CASE("Runtime check: names why an interpreter cannot run, with the PATH searched") {
  TempDir tmp;
  tmp.Mkdir("a");
  tmp.Mkdir("b");
  std::string path = tmp / "a" + ":" + tmp / "b";
  RuntimeCheck absent = CheckRuntimeInPath(Runtime::kPython, path);
  CHECK(absent.code == "interpreter_not_found");
  CHECK(absent.reason == "python3 is not on PATH (" + path + ")");
  tmp.Write("b/python3", "#!/bin/sh\n");
  REQUIRE(::chmod((tmp / "b/python3").c_str(), 0640) == 0);
  RuntimeCheck plain = CheckRuntimeInPath(Runtime::kPython, path);
  CHECK(plain.code == "not_executable");
  CHECK(plain.reason.starts_with(tmp / "b/python3" + " is not executable (mode 0640)"));
  tmp.Mkdir("a/python3");
  CHECK(CheckRuntimeInPath(Runtime::kPython, path).reason ==
        tmp / "a/python3" + " is not a regular file and no other PATH directory has python3 (" +
            path + ")");
  Install(tmp, "b/bun");
  CHECK(CheckRuntimeInPath(Runtime::kTs, path).ok());
  RuntimeProbe probe;
  std::vector<RuntimeCheck> all = probe.Check(path);
  REQUIRE(all.size() == 3);
  CHECK(all[2].ok());
  CHECK(all[1].code == "not_executable");
}
