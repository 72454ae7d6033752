#include "run/driver_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using namespace agentd;

namespace {

// Named apart from testing::TempDir, which a unity batch may bring in.
struct DriverTempDir {
  std::string path;
  DriverTempDir() {
    char tmpl[] = "/tmp/agentd-driver-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~DriverTempDir() { std::filesystem::remove_all(path); }
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("driver file: the shared copy is written once, readable by all, named by content",
          "[run]") {
  DriverTempDir t;
  DriverFile d("ts-run", "driver();\n", t.path + "/shared", t.path + "/private");
  std::optional<std::string> p = d.Ensure(false);
  REQUIRE(p);
  CHECK(p->starts_with(t.path + "/shared/ts-run-"));
  CHECK(Slurp(*p) == "driver();\n");
  struct stat st {};
  REQUIRE(::stat(p->c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0644);
  REQUIRE(::stat((t.path + "/shared").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0755);
  DriverFile other("ts-run", "other();\n", t.path + "/shared", t.path + "/private");
  CHECK(other.Ensure(false) != p);
}

TEST_CASE("driver file: a copy changed on disk is replaced before it is used", "[run]") {
  DriverTempDir t;
  DriverFile d("ts-run", "driver();\n", t.path, "");
  std::string p = d.Ensure(false).value();
  std::ofstream(p) << "evil();\n";
  CHECK(d.Ensure(false) == p);
  CHECK(Slurp(p) == "driver();\n");
  ::chmod(p.c_str(), 0666);
  CHECK(d.Ensure(false) == p);
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0644);
  // A link in its place is replaced, not followed.
  std::filesystem::remove(p);
  std::ofstream(t.path + "/target") << "evil();\n";
  std::filesystem::create_symlink(t.path + "/target", p);
  CHECK(d.Ensure(false) == p);
  CHECK(!std::filesystem::is_symlink(p));
  CHECK(Slurp(t.path + "/target") == "evil();\n");
}

TEST_CASE(
    "driver file: a directory others can write is refused; the private copy serves only "
    "the daemon's own identity",
    "[run]") {
  DriverTempDir t;
  std::string shared = t.path + "/shared";
  REQUIRE(::mkdir(shared.c_str(), 0777) == 0);
  REQUIRE(::chmod(shared.c_str(), 0777) == 0);
  DriverFile d("ts-run", "driver();\n", shared, t.path + "/private");
  CHECK(!d.Ensure(false));
  CHECK(d.last_error().find("writable by others") != std::string::npos);
  std::optional<std::string> p = d.Ensure(true);
  REQUIRE(p);
  CHECK(p->starts_with(t.path + "/private/"));
  struct stat st {};
  REQUIRE(::stat((t.path + "/private").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
}
