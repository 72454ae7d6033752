// The client's search and glob calls against a real daemon.
#include <catch2/catch.hpp>

#include "agentd/client/client.h"
#include "daemon_process.h"

using namespace agentd;
using namespace agentd::client;
using agentd::testing::DaemonProcess;

namespace {

void Put(Client& c, const std::string& path, const std::string& text) {
  WriteOptions w;
  w.parents = true;
  REQUIRE(c.WriteFile(path, text, w).ok());
}

}  // namespace

TEST_CASE("search: matches with lines, columns and context, then the summary", "[client][search]") {
  DaemonProcess d;
  Client c(d.client_options());
  Put(c, d.dir() + "/t/a.txt", "zero\none needle\ntwo\n");
  Put(c, d.dir() + "/t/sub/b.txt", "needle\n");
  Put(c, d.dir() + "/t/skip.log", "needle\n");
  Put(c, d.dir() + "/t/.gitignore", "*.log\n");
  SearchOptions o;
  o.context = 1;
  int streamed = 0;
  o.on_match = [&](const SearchMatch&) {
    ++streamed;
    return Status::Ok();
  };
  auto r = c.Search(d.dir() + "/t", "needle", o);
  REQUIRE(r.ok());
  REQUIRE(r->matches.size() == 2);
  CHECK(streamed == 2);
  CHECK(r->matches[0].path == d.dir() + "/t/a.txt");
  CHECK(r->matches[0].line == 2);
  CHECK(r->matches[0].column == 5);
  CHECK(r->matches[0].before == std::vector<std::string>{"zero"});
  CHECK(r->matches[0].after == std::vector<std::string>{"two"});
  CHECK(r->summary.matches == 2);
  CHECK_FALSE(r->summary.bound);

  SearchOptions bounded;
  bounded.walk.max_results = 1;
  bounded.walk.gitignore = false;
  r = c.Search(d.dir() + "/t", "needle", bounded);
  REQUIRE(r.ok());
  CHECK(r->matches.size() == 1);
  CHECK(r->summary.bound == std::optional<std::string>("results"));

  auto bad = c.Search(d.dir() + "/t", "a(b");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == ErrorCode::kInvalidRequest);
}

TEST_CASE("glob: sorted entries matching a pattern with brace sets", "[client][search]") {
  DaemonProcess d;
  Client c(d.client_options());
  Put(c, d.dir() + "/g/src/a.cc", "");
  Put(c, d.dir() + "/g/src/a.h", "");
  Put(c, d.dir() + "/g/src/a.py", "");
  auto g = c.Glob(d.dir() + "/g", "**/*.{cc,h}");
  REQUIRE(g.ok());
  REQUIRE(g->entries.size() == 2);
  CHECK(g->entries[0].path == d.dir() + "/g/src/a.cc");
  CHECK(g->entries[1].path == d.dir() + "/g/src/a.h");
  CHECK_FALSE(g->truncated);
}
