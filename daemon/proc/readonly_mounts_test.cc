#include "proc/readonly_mounts.h"

#include "testing/temp_dir.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

using namespace agentd;

namespace {

// sys/lib, other, and link-to-sys -> sys.
struct Tree : testing::TempDir {
  Tree() : root(path()) {
    std::filesystem::create_directories(root + "/sys/lib");
    std::filesystem::create_directories(root + "/other");
    std::filesystem::create_directory_symlink(root + "/sys", root + "/link-to-sys");
  }
  std::string root;
};

}  // namespace

TEST_CASE("read-only paths are resolved, sorted and a path inside another is dropped",
          "[readonly_mounts]") {
  Tree t;
  Result<std::vector<std::string>> paths =
      ResolveReadonlyPaths({t.root + "/sys/lib", t.root + "/other"}, {t.root + "/link-to-sys"});
  REQUIRE(paths.ok());
  // The symlink counts as its target, which covers sys/lib.
  CHECK(*paths == std::vector<std::string>{t.root + "/other", t.root + "/sys"});
}

TEST_CASE("a missing default read-only path is left out", "[readonly_mounts]") {
  Tree t;
  Result<std::vector<std::string>> paths =
      ResolveReadonlyPaths({t.root + "/absent", t.root + "/other"}, {});
  REQUIRE(paths.ok());
  CHECK(*paths == std::vector<std::string>{t.root + "/other"});
}

TEST_CASE("a missing read-only path the operator named is an error naming it",
          "[readonly_mounts]") {
  Tree t;
  Result<std::vector<std::string>> paths = ResolveReadonlyPaths({}, {t.root + "/absent"});
  REQUIRE_FALSE(paths.ok());
  CHECK(paths.status().message().find(t.root + "/absent") != std::string::npos);
  CHECK(paths.status().message().find("No such file") != std::string::npos);
}

TEST_CASE("a sibling whose name merely starts like a listed path is kept", "[readonly_mounts]") {
  Tree t;
  std::filesystem::create_directory(t.root + "/sys2");
  Result<std::vector<std::string>> paths =
      ResolveReadonlyPaths({t.root + "/sys", t.root + "/sys2"}, {});
  REQUIRE(paths.ok());
  CHECK(*paths == std::vector<std::string>{t.root + "/sys", t.root + "/sys2"});
}

TEST_CASE("the probe answers why when the daemon cannot mount, and nothing when it can",
          "[readonly_mounts]") {
  Tree t;
  ProbeChildren probes;
  size_t other = StartReadonlyMountsProbe(probes, {t.root + "/other"});
  size_t none = StartReadonlyMountsProbe(probes, {});
  probes.WaitAll();
  std::string why = ReadonlyMountsVerdict(probes, other);
  if (::geteuid() != 0) {
    CHECK(why.find("cannot bind paths read-only") != std::string::npos);
  }
  // Either way the probe's namespace stayed its own: the path is still
  // writable here.
  CHECK(::access((t.root + "/other").c_str(), W_OK) == 0);
  CHECK(ReadonlyMountsVerdict(probes, none).empty());
}
