#include "reuse/ipc_sweep.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "testing/temp_dir.h"

namespace agentd {
namespace {

// The kernel's table layouts (proc(5), /proc/sysvipc): a header, then one
// object per line, key first and id second.
void WriteTables(const std::string& root) {
  std::ofstream(root + "/shm")
      << "       key      shmid perms                  size  cpid  lpid nattch   uid   gid\n"
         "         0          7   600                  4096   100   100      0     0     0\n"
         "1234567890         12   644                 65536   101     0      0     0     0\n";
  std::ofstream(root + "/msg")
      << "       key      msqid perms      cbytes       qnum lspid lrpid\n"
         "        -1          3   644           0          0     0     0\n";
  std::ofstream(root + "/sem") << "       key      semid perms      nsems   uid   gid\n";
}

}  // namespace

TEST_CASE("the IPC tables are read as kind, id and key", "[ipc]") {
  testing::TempDir tmp;
  WriteTables(tmp.path());
  Result<std::vector<IpcObject>> listed = ListSysvIpc(tmp.path());
  REQUIRE(listed.ok());
  REQUIRE(listed->size() == 3);
  CHECK((*listed)[0] == IpcObject{"shm", 7, 0});
  CHECK((*listed)[1] == IpcObject{"shm", 12, 1234567890});
  CHECK((*listed)[2] == IpcObject{"msg", 3, -1});
}

TEST_CASE("objects beyond the baseline are what the verification names", "[ipc]") {
  testing::TempDir tmp;
  WriteTables(tmp.path());
  std::vector<IpcObject> baseline{{"shm", 7, 0}};
  std::vector<ResetRemaining> left = IpcLeft(baseline, tmp.path());
  REQUIRE(left.size() == 2);
  CHECK(left[0].kind == "ipc");
  CHECK(left[0].name == "shm 12 (key 0x499602d2)");
  CHECK(left[1].name == "msg 3 (key 0xffffffff)");
}

TEST_CASE("a kernel without SysV IPC lists nothing; an unreadable table is an error", "[ipc]") {
  testing::TempDir tmp;
  Result<std::vector<IpcObject>> none = ListSysvIpc(tmp.path() + "/absent");
  REQUIRE(none.ok());
  CHECK(none->empty());
  ::mkdir((tmp.path() + "/shm").c_str(), 0700);  // a directory cannot be read as a table
  Result<std::vector<IpcObject>> broken = ListSysvIpc(tmp.path());
  CHECK_FALSE(broken.ok());
  std::vector<ResetRemaining> left = IpcLeft({}, tmp.path());
  REQUIRE(left.size() == 1);
  CHECK(left[0].reason.starts_with("cannot list the IPC objects"));
}

}  // namespace agentd
