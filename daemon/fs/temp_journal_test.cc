#include "fs/temp_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "agentd/trees/unique_fd.h"
#include "sys/read_file.h"
#include "testing/temp_dir.h"

using namespace agentd;
using agentd::testing::TempDir;

namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// What a daemon killed while `name` existed in `target` leaves in `journal`.
std::string CrashWhile(const std::string& journal, const std::string& target,
                       const std::string& name) {
  UniqueFd dir(::open(target.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  std::string entry = journal + "/" + name;
  std::string recorded;
  {
    TempJournal::Entry e = TempJournal::Record(dir.get(), name);
    recorded = *ReadFileToString(entry, 8192);
  }
  REQUIRE_FALSE(Exists(entry));  // a finished transfer forgets its entry
  UniqueFd again(::open(entry.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  REQUIRE(::write(again.get(), recorded.data(), recorded.size()) ==
          static_cast<ssize_t>(recorded.size()));
  return recorded;
}

}  // namespace

TEST_CASE("temporaries a killed daemon left are removed at the next start", "[fs][crash]") {
  TempDir tmp;
  tmp.Mkdir("target");
  REQUIRE(TempJournal::Enable(tmp / "journal") == 0);
  CHECK(CrashWhile(tmp / "journal", tmp / "target", ".agentd-tmp-0123") ==
        tmp / "target/.agentd-tmp-0123");
  tmp.Write("target/.agentd-tmp-0123", "partial");
  CrashWhile(tmp / "journal", tmp / "target", ".agentd-stage-4567");
  tmp.Mkdir("target/.agentd-stage-4567");
  tmp.Mkdir("target/.agentd-stage-4567/deep");
  tmp.Write("target/.agentd-stage-4567/deep/member", "x");
  tmp.Write("target/kept", "user data");

  CHECK(TempJournal::Enable(tmp / "journal") == 2);
  CHECK_FALSE(Exists(tmp / "target/.agentd-tmp-0123"));
  CHECK_FALSE(Exists(tmp / "target/.agentd-stage-4567"));
  CHECK(Exists(tmp / "target/kept"));
  CHECK_FALSE(Exists(tmp / "journal/.agentd-tmp-0123"));
  TempJournal::Disable();
}

TEST_CASE("the sweep removes only names the daemon makes", "[fs][crash][security]") {
  TempDir tmp;
  tmp.Mkdir("journal");
  tmp.Write("target-file", "precious");
  tmp.Write("journal/.agentd-tmp-forged", tmp / "target-file");
  CHECK(TempJournal::Enable(tmp / "journal") == 0);
  CHECK(Exists(tmp / "target-file"));
  CHECK_FALSE(Exists(tmp / "journal/.agentd-tmp-forged"));
  TempJournal::Disable();
}
