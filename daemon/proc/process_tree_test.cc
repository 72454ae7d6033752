#include "proc/process_tree.h"

#include <unistd.h>

#include <catch2/catch.hpp>

namespace agentd {
namespace {

TEST_CASE("a stat line with spaces and parentheses in the command parses", "[process_tree]") {
  std::optional<ProcessEntry> e = ParseProcStat("4242 (my (odd) cmd) S 17 4242 4242 0 -1 4194560");
  REQUIRE(e);
  CHECK(e->pid == 4242);
  CHECK(e->ppid == 17);
  CHECK(e->state == 'S');
  CHECK(e->comm == "my (odd) cmd");
}

TEST_CASE("a malformed stat line is refused", "[process_tree]") {
  CHECK_FALSE(ParseProcStat(""));
  CHECK_FALSE(ParseProcStat("12 cmd S 1"));
  CHECK_FALSE(ParseProcStat("x (cmd) S 1"));
  CHECK_FALSE(ParseProcStat("12 (cmd) S"));
}

TEST_CASE("descendants follow parent links and leave spared subtrees out", "[process_tree]") {
  // 1 -> 10 (daemon) -> 20 -> 21 -> 22; 10 -> 30 (spared) -> 31; 1 -> 40.
  std::vector<ProcessEntry> all = {
      {10, 1, 'S', "agentd"}, {20, 10, 'S', "sh"}, {21, 20, 'S', "sleep"}, {22, 21, 'Z', "x"},
      {30, 10, 'S', "init"},  {31, 30, 'S', "w"},  {40, 1, 'S', "other"}};
  std::vector<ProcessEntry> d = DescendantsOf(10, {30}, all);
  REQUIRE(d.size() == 3);
  CHECK(d[0].pid == 20);
  CHECK(d[1].pid == 21);
  CHECK(d[2].pid == 22);
  CHECK(DescendantsOf(10, {}, all).size() == 5);
}

TEST_CASE("the live process list holds this process with its parent", "[process_tree]") {
  bool found = false;
  for (const ProcessEntry& e : ListProcesses()) {
    if (e.pid == ::getpid()) found = e.ppid == ::getppid();
  }
  CHECK(found);
}

}  // namespace
}  // namespace agentd
