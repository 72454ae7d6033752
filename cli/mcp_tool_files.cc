// The file tools: read_file, write_file, edit_file, list_dir, stat, search,
// glob.
// Reads and searches are bounded at the source (the daemon stops at the
// budget) rather than fetched whole and cut afterwards.
#include <algorithm>

#include "agentd/protocol/fs.h"
#include "agentd/protocol/time_format.h"
#include "mcp_tools.h"

namespace agentd::cli::mcp {
namespace {

std::string Describe(const FileStat& st) {
  std::string line = std::string(FileTypeName(st.type)) + " " + FormatMode(st.mode) + " " +
                     std::to_string(st.size) + " " + st.path;
  if (st.target) line += " -> " + *st.target;
  return line + "\n";
}

ToolOutput StatOutput(const FileStat& st) {
  ToolOutput out;
  out.structured = std::move(EncodeFileStat(st).as_object());
  out.text = Describe(st);
  return out;
}

}  // namespace

asio::awaitable<ToolOutput> ReadFileTool(ToolContext& ctx, const json::Object& args) {
  std::string path = StringArg(args, "path").value_or("");
  client::ReadOptions o;
  std::optional<int64_t> start = IntArg(args, "start_line"), end = IntArg(args, "end_line");
  if (start) o.start_line = static_cast<uint64_t>(*start);
  if (end) o.end_line = static_cast<uint64_t>(*end);
  if (start && end && *end < *start) {
    co_return ErrorOutput(Status::InvalidRequest(
        "end_line " + std::to_string(*end) + " is before start_line " + std::to_string(*start)));
  }
  size_t budget = ctx.max_result_bytes > 512 ? ctx.max_result_bytes - 512 : ctx.max_result_bytes;
  std::string content;
  bool cut = false;
  Result<uint64_t> n = co_await ctx.client.ReadFileTo(path, o, [&](std::string_view bytes) {
    size_t room = budget - content.size();
    content.append(bytes.substr(0, room));
    if (bytes.size() <= room) return Status::Ok();
    cut = true;  // stop reading: the rest would only be thrown away
    return Status::Internal("result bound reached");
  });
  if (!n.ok() && !cut) co_return ErrorOutput(n.status());
  uint64_t first = o.start_line.value_or(1);
  ToolOutput out;
  out.structured.Set("path", path).Set("start_line", first);
  if (o.end_line) out.structured.Set("end_line", *o.end_line);
  out.text = content;
  if (cut) {
    // Keep whole lines and say where to go on.
    size_t keep = content.rfind('\n');
    content.resize(keep == std::string::npos ? 0 : keep + 1);
    uint64_t lines = static_cast<uint64_t>(std::count(content.begin(), content.end(), '\n'));
    uint64_t next = first + lines;
    std::string note = "[cut: lines " + std::to_string(first) + "-" + std::to_string(next - 1) +
                       " shown (" + std::to_string(content.size()) +
                       " bytes, the --max-result-bytes bound); read on with start_line " +
                       std::to_string(next) + "]\n";
    out.text = content + note;
    out.structured.Set("cut", json::Object()
                                  .Set("max_result_bytes", ctx.max_result_bytes)
                                  .Set("next_start_line", next)
                                  .Set("message", note));
  }
  out.structured.Set("content", content).Set("bytes", content.size());
  co_return out;
}

asio::awaitable<ToolOutput> WriteFileTool(ToolContext& ctx, const json::Object& args) {
  client::WriteOptions o;
  o.parents = BoolArg(args, "parents", true);
  if (std::optional<std::string> mode = StringArg(args, "mode")) {
    Result<uint32_t> m = ParseMode(*mode, "mode");
    if (!m.ok()) co_return ErrorOutput(m.status());
    o.mode = *m;
  }
  std::string content = StringArg(args, "content").value_or("");
  size_t bytes = content.size();
  Result<FileStat> st =
      co_await ctx.client.WriteFile(StringArg(args, "path").value_or(""), std::move(content), o);
  if (!st.ok()) co_return ErrorOutput(st.status());
  ToolOutput out = StatOutput(*st);
  out.text = "wrote " + std::to_string(bytes) + " bytes: " + out.text;
  co_return out;
}

asio::awaitable<ToolOutput> EditFileTool(ToolContext& ctx, const json::Object& args) {
  EditRequest req;
  req.path = StringArg(args, "path").value_or("");
  req.if_match = StringArg(args, "if_match");
  if (const json::Value* edits = args.Find("edits"); edits && edits->is_array()) {
    for (const json::Value& e : edits->as_array()) {
      TextEdit t;
      t.old_text = StringArg(e.as_object(), "old").value_or("");
      t.new_text = StringArg(e.as_object(), "new").value_or("");
      t.count = static_cast<uint64_t>(IntArg(e.as_object(), "count").value_or(1));
      req.edits.push_back(std::move(t));
    }
  }
  if (const json::Value* lines = args.Find("line_edits"); lines && lines->is_array()) {
    for (const json::Value& e : lines->as_array()) {
      LineEdit l;
      l.start_line = static_cast<uint64_t>(IntArg(e.as_object(), "start_line").value_or(1));
      l.end_line = static_cast<uint64_t>(IntArg(e.as_object(), "end_line").value_or(0));
      l.text = StringArg(e.as_object(), "text").value_or("");
      req.line_edits.push_back(std::move(l));
    }
  }
  if (req.edits.empty() && req.line_edits.empty())
    co_return ErrorOutput(Status::InvalidRequest("give at least one of edits and line_edits"));
  Result<EditResponse> r = co_await ctx.client.Edit(std::move(req));
  if (!r.ok()) co_return ErrorOutput(r.status());
  ToolOutput out;
  out.structured = std::move(EncodeEditResponse(*r).as_object());
  out.text = "edited " + r->path + " (" + std::to_string(r->size) + " bytes, etag " + r->etag +
             ")\n" + r->diff;
  co_return out;
}

asio::awaitable<ToolOutput> StatTool(ToolContext& ctx, const json::Object& args) {
  Result<FileStat> st = co_await ctx.client.Stat(StringArg(args, "path").value_or(""),
                                                 BoolArg(args, "follow", false));
  if (!st.ok()) co_return ErrorOutput(st.status());
  co_return StatOutput(*st);
}

asio::awaitable<ToolOutput> ListDirTool(ToolContext& ctx, const json::Object& args) {
  Result<ListResponse> list = co_await ctx.client.ListDir(StringArg(args, "path").value_or(""));
  if (!list.ok()) co_return ErrorOutput(list.status());
  ToolOutput out;
  out.structured = std::move(EncodeListResponse(*list).as_object());
  for (const FileStat& e : list->entries) out.text += Describe(e);
  if (list->entries.empty()) out.text = "(empty directory)\n";
  co_return out;
}

asio::awaitable<ToolOutput> SearchTool(ToolContext& ctx, const json::Object& args) {
  client::SearchOptions o;
  o.fixed = BoolArg(args, "fixed", false);
  o.ignore_case = BoolArg(args, "ignore_case", false);
  if (const json::Value* g = args.Find("glob"); g && g->is_array()) {
    for (const json::Value& p : g->as_array())
      if (p.is_string()) o.glob.push_back(p.as_string());
  }
  o.context = static_cast<uint64_t>(IntArg(args, "context").value_or(0));
  o.walk.hidden = BoolArg(args, "hidden", false);
  if (auto m = IntArg(args, "max_results")) o.walk.max_results = static_cast<uint64_t>(*m);
  // The daemon stops at the budget and names the bound in its summary.
  o.max_bytes = ctx.max_result_bytes / 2;
  Result<client::SearchResult> r = co_await ctx.client.Search(
      StringArg(args, "path").value_or(""), StringArg(args, "pattern").value_or(""), o);
  if (!r.ok()) co_return ErrorOutput(r.status());
  ToolOutput out;
  json::Array matches;
  for (const SearchMatch& m : r->matches) {
    matches.push_back(EncodeSearchMatch(m));
    for (size_t k = 0; k < m.before.size(); ++k)
      out.text +=
          m.path + "-" + std::to_string(m.line - m.before.size() + k) + "-" + m.before[k] + "\n";
    out.text +=
        m.path + ":" + std::to_string(m.line) + ":" + m.text + (m.cut ? " [line cut]" : "") + "\n";
    for (size_t k = 0; k < m.after.size(); ++k)
      out.text += m.path + "-" + std::to_string(m.line + 1 + k) + "-" + m.after[k] + "\n";
  }
  const SearchSummary& s = r->summary;
  out.text += std::to_string(s.matches) + " matches in " + std::to_string(s.files_scanned) +
              " files" + (s.bound ? "; cut by the " + *s.bound + " bound" : "") + "\n";
  out.structured.Set("matches", std::move(matches)).Set("summary", EncodeSearchSummary(s));
  co_return out;
}

asio::awaitable<ToolOutput> GlobTool(ToolContext& ctx, const json::Object& args) {
  client::WalkQuery w;
  w.hidden = BoolArg(args, "hidden", false);
  if (auto m = IntArg(args, "max_results")) w.max_results = static_cast<uint64_t>(*m);
  Result<GlobResponse> g = co_await ctx.client.Glob(StringArg(args, "path").value_or(""),
                                                    StringArg(args, "pattern").value_or(""), w);
  if (!g.ok()) co_return ErrorOutput(g.status());
  ToolOutput out;
  out.structured = std::move(EncodeGlobResponse(*g).as_object());
  for (const FileStat& e : g->entries)
    out.text += e.path + (e.type == FileStat::Type::kDir ? "/\n" : "\n");
  if (g->entries.empty()) out.text = "(no match)\n";
  if (g->bound) out.text += "(cut by the " + *g->bound + " bound)\n";
  co_return out;
}

}  // namespace agentd::cli::mcp
