// Checks of content search and glob (docs/PROTOCOL.md, "Search", "Glob"
// and "Pattern rules").
#include "checks.h"
#include "suite.h"

namespace agentd::conformance {
namespace {

void Put(CheckContext& ctx, const std::string& path, const std::string& text) {
  client::WriteOptions w;
  w.parents = true;
  ExpectOk(ctx.client().WriteFile(path, text, w), "write " + path);
}

void Symlink(CheckContext& ctx, const std::string& target, const std::string& link) {
  ExecStartRequest ln;
  ln.argv = {"ln", "-s", target, link};
  if (ExpectOk(ctx.client().Run(ln), "ln -s").exit_code != 0) throw CheckSkipped{"no ln"};
}

std::vector<std::string> Paths(const client::SearchResult& r, const std::string& base) {
  std::vector<std::string> out;
  for (const SearchMatch& m : r.matches) out.push_back(m.path.substr(base.size()));
  return out;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : " ") + s;
  return "[" + out + "]";
}

void SearchAnswersLinesThenASummary(CheckContext& ctx) {
  std::string dir = ctx.Scratch("search");
  Put(ctx, dir + "/a.txt", "zero\none needle here\n");
  Put(ctx, dir + "/sub/b.txt", "needle\n");
  client::SearchResult r = ExpectOk(ctx.client().Search(dir, "needle"), "search");
  Expect(Paths(r, dir) == std::vector<std::string>{"/a.txt", "/sub/b.txt"},
         "matches in walk order, got " + Join(Paths(r, dir)));
  Expect(
      r.matches[0].line == 2 && r.matches[0].column == 5 && r.matches[0].text == "one needle here",
      "line 2, column 5, the line's text");
  Expect(r.summary.matches == 2 && r.summary.files_scanned == 2 && !r.summary.bound,
         "the summary counts 2 matches in 2 files, no bound hit");
  client::SearchOptions one;
  one.walk.max_results = 1;
  r = ExpectOk(ctx.client().Search(dir, "needle", one), "search with max_results=1");
  Expect(r.matches.size() == 1 && r.summary.truncated && r.summary.bound == "results",
         "max_results=1 answers one match and names the results bound");
  ExpectError(ctx.client().Search(dir, "a(b"), ErrorCode::kInvalidRequest,
              "a pattern that does not compile");
}

void SearchNeverEntersASymlinkedDirectory(CheckContext& ctx) {
  std::string outside = ctx.Scratch("outside");
  std::string dir = ctx.Scratch("searched");
  Put(ctx, outside + "/secret.txt", "needle outside\n");
  Put(ctx, dir + "/in.txt", "needle inside\n");
  Symlink(ctx, outside, dir + "/escape");
  client::SearchResult r = ExpectOk(ctx.client().Search(dir, "needle"), "search");
  Expect(Paths(r, dir) == std::vector<std::string>{"/in.txt"},
         "only the file inside is found, got " + Join(Paths(r, dir)));
  GlobResponse g = ExpectOk(ctx.client().Glob(dir, "**/*.txt"), "glob");
  Expect(g.entries.size() == 1 && g.entries[0].path == dir + "/in.txt",
         "glob does not enter the symlinked directory either");
  // A loop back to the searched directory ends (follow=1).
  Symlink(ctx, dir, dir + "/loop");
  client::SearchOptions follow;
  follow.walk.follow = true;
  r = ExpectOk(ctx.client().Search(dir, "needle inside", follow), "search with follow=1");
  Expect(!r.matches.empty() && r.matches.size() <= 2, "a symlink loop is not walked forever");
}

void GitignoreNegationReincludes(CheckContext& ctx) {
  std::string dir = ctx.Scratch("ignored");
  Put(ctx, dir + "/.gitignore", "*.log\n!keep.log\nbuild/\n");
  for (const char* f : {"a.log", "keep.log", "build/out.txt", "main.c"}) {
    Put(ctx, dir + "/" + f, "needle\n");
  }
  client::SearchResult r = ExpectOk(ctx.client().Search(dir, "needle"), "search");
  Expect(Paths(r, dir) == std::vector<std::string>{"/keep.log", "/main.c"},
         "*.log and build/ ignored, keep.log re-included, got " + Join(Paths(r, dir)));
  client::SearchOptions all;
  all.walk.gitignore = false;
  r = ExpectOk(ctx.client().Search(dir, "needle", all), "search with gitignore=0");
  Expect(r.matches.size() == 4, "gitignore=0 searches every file");
}

void GlobFollowsThePatternRules(CheckContext& ctx) {
  std::string dir = ctx.Scratch("glob");
  for (const char* f : {"a.c", "b.h", "src/m.c", "src/deep/n.c", "x[1].txt"})
    Put(ctx, dir + "/" + f, "");
  auto names = [&](const std::string& pattern) {
    GlobResponse g = ExpectOk(ctx.client().Glob(dir, pattern), "glob " + pattern);
    std::vector<std::string> out;
    for (const FileStat& e : g.entries) out.push_back(e.path.substr(dir.size() + 1));
    return out;
  };
  using V = std::vector<std::string>;
  Expect(names("*.c") == V{"a.c"}, "* stays within one component");
  Expect(names("**/*.c") == V{"a.c", "src/deep/n.c", "src/m.c"}, "** spans components, sorted");
  Expect(names("?.[ch]") == V{"a.c", "b.h"}, "? and [...]");
  Expect(names("src/*.{c,h}") == V{"src/m.c"}, "brace sets");
  Expect(names("x\\[1\\].txt") == V{"x[1].txt"}, "backslash escapes");
}

}  // namespace

void AddSearchChecks(std::vector<Check>& checks) {
  checks.push_back({"search", "matching lines with 1-based line and column, then a summary",
                    SearchAnswersLinesThenASummary});
  checks.push_back({"search", "a search never escapes through a symlinked directory",
                    SearchNeverEntersASymlinkedDirectory});
  checks.push_back(
      {"search", "a .gitignore negation re-includes a file", GitignoreNegationReincludes});
  checks.push_back({"search", "glob follows each pattern rule", GlobFollowsThePatternRules});
}

}  // namespace agentd::conformance
