// agentctl grep and agentctl glob (GET /v1/fs/search and /v1/fs/glob).
// grep prints each match as it arrives ("path:line:text", as grep -n
// does) and exits 0 when something matched, 1 when nothing did (grep's
// convention), so scripts can test it.
#include <unistd.h>

#include <charconv>

#include "commands.h"
#include "exec_format.h"
#include "exit_codes.h"

namespace agentd::cli {
namespace {

// A whole non-negative number, or nullopt.
std::optional<uint64_t> FlagNumber(const ParsedArgs& args, std::string_view flag, bool* bad) {
  std::optional<std::string> text = args.Get(flag);
  if (!text) return std::nullopt;
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
  if (text->empty() || ec != std::errc() || end != text->data() + text->size()) *bad = true;
  return n;
}

client::WalkQuery ReadWalkFlags(const ParsedArgs& args, bool* bad) {
  client::WalkQuery w;
  w.exclude = args.All("exclude");
  w.hidden = args.Has("hidden");
  w.gitignore = !args.Has("no-ignore");
  w.follow = args.Has("follow");
  w.max_results = FlagNumber(args, "max-results", bad);
  if (auto s = FlagNumber(args, "timeout-ms", bad)) w.timeout_ms = *s;
  return w;
}

std::string SummaryLine(const SearchSummary& s) {
  std::string line =
      std::to_string(s.matches) + " matches in " + std::to_string(s.files_scanned) + " files";
  if (s.binary_skipped) line += ", " + std::to_string(s.binary_skipped) + " binary skipped";
  if (s.bound) line += "; cut by the " + *s.bound + " bound";
  return line + "\n";
}

}  // namespace

int CmdGrep(Context& ctx) {
  const ParsedArgs& args = ctx.args();
  bool bad = false;
  client::SearchOptions o;
  o.fixed = args.Has("fixed");
  o.ignore_case = args.Has("ignore-case");
  o.glob = args.All("glob");
  o.walk = ReadWalkFlags(args, &bad);
  if (auto c = FlagNumber(args, "context", &bad)) o.context = *c;
  if (bad) return ctx.out().UsageError("--context, --max-results and --timeout-ms take numbers");
  std::string path = args.positional.size() > 1 ? args.positional[1] : "/";
  bool json = ctx.out().json();
  if (!json) {
    o.on_match = [](const SearchMatch& m) {
      std::string out;
      for (size_t k = 0; k < m.before.size(); ++k) {
        out +=
            m.path + "-" + std::to_string(m.line - m.before.size() + k) + "-" + m.before[k] + "\n";
      }
      out += m.path + ":" + std::to_string(m.line) + ":" + m.text + (m.cut ? " [cut]" : "") + "\n";
      for (size_t k = 0; k < m.after.size(); ++k) {
        out += m.path + "-" + std::to_string(m.line + 1 + k) + "-" + m.after[k] + "\n";
      }
      if (!m.before.empty() || !m.after.empty()) out += "--\n";
      WriteAllTo(STDOUT_FILENO, out);
      return Status::Ok();
    };
  }
  Result<client::SearchResult> r = ctx.client().Search(path, args.positional[0], o);
  if (!r.ok()) return ctx.out().Fail(r.status());
  if (json) {
    json::Array matches;
    for (const SearchMatch& m : r->matches) matches.push_back(EncodeSearchMatch(m));
    json::Object result;
    result.Set("matches", std::move(matches)).Set("summary", EncodeSearchSummary(r->summary));
    ctx.out().Succeed(result, "");
  } else if (r->summary.bound || ctx.out().stderr_is_tty()) {
    WriteAllTo(STDERR_FILENO, SummaryLine(r->summary));
  }
  return r->matches.empty() ? kExitFailure : kExitOk;
}

int CmdGlob(Context& ctx) {
  const ParsedArgs& args = ctx.args();
  bool bad = false;
  client::WalkQuery w = ReadWalkFlags(args, &bad);
  if (bad) return ctx.out().UsageError("--max-results and --timeout-ms take numbers");
  std::string path = args.positional.size() > 1 ? args.positional[1] : "/";
  Result<GlobResponse> g = ctx.client().Glob(path, args.positional[0], w);
  if (!g.ok()) return ctx.out().Fail(g.status());
  std::string human;
  for (const FileStat& e : g->entries)
    human += e.path + (e.type == FileStat::Type::kDir ? "/\n" : "\n");
  if (g->bound) human += "(cut by the " + *g->bound + " bound)\n";
  return ctx.out().Succeed(EncodeGlobResponse(*g), human);
}

}  // namespace agentd::cli
