// The tool table: descriptions are written for the model that reads them.
#include "mcp_tools.h"

#include <cmath>
#include <map>

namespace agentd::cli::mcp {

const std::vector<Tool>& Tools() {
  // clang-format off
  static const std::vector<Tool> tools = {
      {"exec", "Run a shell command",
       "Run a shell command in the guest with /bin/sh -c and wait for it to finish. Answers the "
       "exit code, how it ended (signal, timeout) and its stdout and stderr (long output keeps "
       "its start and its end). The command runs in its own process group and is killed at "
       "`timeout` seconds (default 300). To retry after a lost answer without running the "
       "command twice, pass the same `id` again: the guest answers the first run.",
       R"({"type":"object","properties":{
         "command":{"type":"string","minLength":1,"description":"Shell command line, run with /bin/sh -c."},
         "cwd":{"type":"string","description":"Working directory (absolute guest path)."},
         "env":{"type":"object","additionalProperties":{"type":"string"},"description":"Environment variables to set for the command."},
         "timeout":{"type":"integer","minimum":1,"maximum":86400,"description":"Seconds before the command is killed (default 300)."},
         "stdin":{"type":"string","description":"Text given to the command on its standard input."},
         "id":{"type":"string","minLength":1,"maxLength":128,"description":"Exec id for a retry-safe call: a repeated id answers the earlier run instead of starting another. Letters, digits, '-', '_' and '.'."}},
         "required":["command"],"additionalProperties":false})",
       false, true, false, &ExecTool},
      {"run_code", "Run a code snippet",
       "Run a snippet of code in the guest to completion and answer a one-line summary, its "
       "output, and the files it added, modified or removed under its working directory. "
       "`runtime` is shell, python or ts. Use it for short computations and scripts; use exec "
       "for commands.",
       R"({"type":"object","properties":{
         "code":{"type":"string","minLength":1,"description":"The code to run."},
         "runtime":{"type":"string","enum":["shell","python","ts"],"description":"Language runtime (default shell)."},
         "cwd":{"type":"string","description":"Working directory (default: the guest's work directory)."},
         "timeout":{"type":"integer","minimum":1,"maximum":300,"description":"Wall-clock limit in seconds."},
         "stdin":{"type":"string","description":"Text given to the code on its standard input."}},
         "required":["code"],"additionalProperties":false})",
       false, true, false, &RunCodeTool},
      {"read_file", "Read a file",
       "Read a text file in the guest, whole or a range of lines. Lines are numbered from 1 "
       "and the range is inclusive: start_line 10 and end_line 20 read eleven lines. A long "
       "answer is cut and says which line to continue from.",
       R"({"type":"object","properties":{
         "path":{"type":"string","minLength":1,"description":"Absolute guest path of the file."},
         "start_line":{"type":"integer","minimum":1,"description":"First line to read (1-based, default 1)."},
         "end_line":{"type":"integer","minimum":1,"description":"Last line to read, inclusive (default: the end of the file)."}},
         "required":["path"],"additionalProperties":false})",
       true, false, true, &ReadFileTool},
      {"write_file", "Write a file",
       "Create or replace a file in the guest with exactly `content`, atomically (readers see "
       "the old file or the new one, never a part). Missing parent directories are created "
       "unless `parents` is false.",
       R"({"type":"object","properties":{
         "path":{"type":"string","minLength":1,"description":"Absolute guest path of the file."},
         "content":{"type":"string","description":"The whole new content of the file."},
         "mode":{"type":"string","description":"Octal permission bits such as \"0755\" (default 0644, or the existing file's)."},
         "parents":{"type":"boolean","description":"Create missing parent directories (default true)."}},
         "required":["path","content"],"additionalProperties":false})",
       false, true, true, &WriteFileTool},
      {"edit_file", "Edit a file",
       "Change a guest file in place by exact text replacement: each edit's `old` text must "
       "occur exactly `count` times (default 1) and every occurrence becomes `new`. Copy `old` "
       "exactly from the file, with enough surrounding text to be unique. Edits apply in "
       "order and all land or none does; a mismatch answers edit_mismatch with how often "
       "`old` was found and on which lines. `line_edits` replace 1-based inclusive line ranges "
       "first. Answers a unified diff of the change and the file's new etag; pass an etag as "
       "`if_match` to refuse the edit if the file changed since.",
       R"({"type":"object","properties":{
         "path":{"type":"string","minLength":1,"description":"Absolute guest path of the file."},
         "edits":{"type":"array","maxItems":256,"items":{"type":"object","properties":{
           "old":{"type":"string","minLength":1,"description":"Exact text to replace."},
           "new":{"type":"string","description":"Replacement text."},
           "count":{"type":"integer","minimum":1,"description":"How many times old must occur (default 1)."}},
           "required":["old","new"],"additionalProperties":false},
           "description":"Exact replacements, applied in order."},
         "line_edits":{"type":"array","maxItems":256,"items":{"type":"object","properties":{
           "start_line":{"type":"integer","minimum":1,"description":"First line replaced (1-based)."},
           "end_line":{"type":"integer","minimum":0,"description":"Last line replaced, inclusive; start_line - 1 inserts before start_line."},
           "text":{"type":"string","description":"The new lines (empty deletes them)."}},
           "required":["start_line","end_line","text"],"additionalProperties":false},
           "description":"Line-range replacements against the file as read, applied before edits."},
         "if_match":{"type":"string","description":"An etag the file must still have."}},
         "required":["path"],"additionalProperties":false})",
       false, true, false, &EditFileTool},
      {"search", "Search file contents",
       "Search the files below a guest directory (or one file) for a regular expression "
       "(PCRE2) and answer the matching lines as path:line:text. Honours .gitignore and skips "
       "hidden and binary files unless asked.",
       R"({"type":"object","properties":{
         "pattern":{"type":"string","minLength":1,"description":"Regular expression (or literal text with fixed)."},
         "path":{"type":"string","minLength":1,"description":"Absolute guest directory or file to search."},
         "fixed":{"type":"boolean","description":"Treat pattern as literal text."},
         "ignore_case":{"type":"boolean","description":"Match without regard to case."},
         "glob":{"type":"array","items":{"type":"string"},"description":"Only files matching these glob patterns, e.g. [\"*.py\"]."},
         "context":{"type":"integer","minimum":0,"maximum":20,"description":"Lines of context before and after each match."},
         "hidden":{"type":"boolean","description":"Also search names starting with '.'."},
         "max_results":{"type":"integer","minimum":1,"description":"Stop after this many matches (default 1000)."}},
         "required":["pattern","path"],"additionalProperties":false})",
       true, false, true, &SearchTool},
      {"glob", "Find files by name",
       "List the guest paths below a directory whose path matches a glob pattern: *, ?, [...], "
       "** for any depth, {a,b} for alternatives (e.g. \"**/*.py\"). Sorted; honours "
       ".gitignore.",
       R"({"type":"object","properties":{
         "pattern":{"type":"string","minLength":1,"description":"Glob pattern relative to path, e.g. \"src/**/*.ts\"."},
         "path":{"type":"string","minLength":1,"description":"Absolute guest directory to search below."},
         "hidden":{"type":"boolean","description":"Also match names starting with '.'."},
         "max_results":{"type":"integer","minimum":1,"description":"At most this many paths (default 1000)."}},
         "required":["pattern","path"],"additionalProperties":false})",
       true, false, true, &GlobTool},
      {"list_dir", "List a directory",
       "List the entries of a guest directory: name, type, size, mode and modification time.",
       R"({"type":"object","properties":{
         "path":{"type":"string","minLength":1,"description":"Absolute guest directory."}},
         "required":["path"],"additionalProperties":false})",
       true, false, true, &ListDirTool},
      {"stat", "Describe a path",
       "Describe one guest path: type, size, mode, owner, modification time, and a symlink's "
       "target. Answers not_found when nothing is there.",
       R"({"type":"object","properties":{
         "path":{"type":"string","minLength":1,"description":"Absolute guest path."},
         "follow":{"type":"boolean","description":"Describe what a symlink points to instead of the link."}},
         "required":["path"],"additionalProperties":false})",
       true, false, true, &StatTool},
  };
  // clang-format on
  return tools;
}

const Tool* FindTool(std::string_view name) {
  for (const Tool& t : Tools()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const json::Value& InputSchema(const Tool& tool) {
  // Parsed once; a table entry that does not parse is a programming error
  // a test catches (every schema is listed and checked).
  static const std::map<std::string_view, json::Value> schemas = [] {
    std::map<std::string_view, json::Value> m;
    for (const Tool& t : Tools()) {
      Result<json::Value> v = json::Parse(t.input_schema);
      m.emplace(t.name, v.ok() ? std::move(*v) : json::Value(json::Object()));
    }
    return m;
  }();
  return schemas.at(tool.name);
}

json::Object ToolListing(const Tool& tool) {
  json::Object annotations;
  annotations.Set("title", tool.title)
      .Set("readOnlyHint", tool.read_only)
      .Set("destructiveHint", tool.destructive)
      .Set("idempotentHint", tool.idempotent)
      .Set("openWorldHint", false);
  json::Object o;
  o.Set("name", tool.name)
      .Set("title", tool.title)
      .Set("description", tool.description)
      .Set("inputSchema", InputSchema(tool))
      .Set("annotations", std::move(annotations));
  return o;
}

ToolOutput ErrorOutput(const Status& status) {
  ToolOutput out;
  out.is_error = true;
  out.text = "error: " + std::string(status.code_name()) + ": " + status.message();
  if (!status.details().empty()) out.text += "\n" + json::Serialize(status.details());
  json::Value body = ErrorBody(status);
  out.structured = std::move(body.as_object());
  return out;
}

std::optional<std::string> StringArg(const json::Object& args, std::string_view name) {
  const json::Value* v = args.Find(name);
  if (!v || !v->is_string()) return std::nullopt;
  return v->as_string();
}

std::optional<int64_t> IntArg(const json::Object& args, std::string_view name) {
  const json::Value* v = args.Find(name);
  if (!v || !v->is_number()) return std::nullopt;
  if (v->is_int()) return v->as_int();
  double d = v->as_double();
  if (!std::isfinite(d) || std::fabs(d) > 9e15) return std::nullopt;
  return static_cast<int64_t>(d);
}

bool BoolArg(const json::Object& args, std::string_view name, bool fallback) {
  const json::Value* v = args.Find(name);
  return v && v->is_bool() ? v->as_bool() : fallback;
}

}  // namespace agentd::cli::mcp
