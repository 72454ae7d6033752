// File commands: cat, put, edit, stat, ls, mkdir, mv, rm.
#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>

#include "agentd/protocol/time_format.h"
#include "commands.h"
#include "exec_format.h"
#include "exit_codes.h"

namespace agentd::cli {
namespace {

// "A:B", "A:" or ":B" into two optional numbers.
bool ParseSpan(const std::string& text, std::optional<uint64_t>* a, std::optional<uint64_t>* b) {
  size_t colon = text.find(':');
  if (colon == std::string::npos) return false;
  auto num = [](std::string_view s, std::optional<uint64_t>* out) {
    if (s.empty()) return true;
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || end != s.data() + s.size()) return false;
    *out = n;
    return true;
  };
  return num(std::string_view(text).substr(0, colon), a) &&
         num(std::string_view(text).substr(colon + 1), b);
}

std::string TypeLetter(FileStat::Type t) {
  switch (t) {
    case FileStat::Type::kDir:
      return "d";
    case FileStat::Type::kSymlink:
      return "l";
    case FileStat::Type::kFile:
      return "-";
    case FileStat::Type::kOther:
      return "?";
  }
  return "?";
}

std::string DescribeStat(const FileStat& st) {
  std::vector<std::vector<std::string>> rows = {
      {"path", st.path},
      {"type", std::string(FileTypeName(st.type))},
      {"size", std::to_string(st.size) + " (" + Output::HumanSize(st.size) + ")"},
      {"mode", FormatMode(st.mode)},
      {"owner", std::to_string(st.uid) + ":" + std::to_string(st.gid)},
      {"mtime", FormatRfc3339(st.mtime)},
  };
  if (st.target) rows.push_back({"target", *st.target});
  if (st.etag) rows.push_back({"etag", *st.etag});
  return Output::Table(rows);
}

// --if-match TAG / --if-none-match (docs/PROTOCOL.md, "ETags and
// preconditions").
client::Preconditions GuardFrom(const ParsedArgs& args) {
  return client::Preconditions{args.Get("if-match"), args.Has("if-none-match")};
}

// The --old/--new pairs (with --count, if given, one per pair) and the
// --lines/--text pairs of `agentctl edit`, or a usage message.
Result<EditRequest> EditFrom(const ParsedArgs& args) {
  EditRequest req;
  req.path = args.positional[0];
  std::vector<std::string> olds = args.All("old");
  std::vector<std::string> news = args.All("new");
  std::vector<std::string> counts = args.All("count");
  if (olds.size() != news.size()) {
    return Status::InvalidRequest("each --old needs its --new (" + std::to_string(olds.size()) +
                                  " --old, " + std::to_string(news.size()) + " --new)");
  }
  if (!counts.empty() && counts.size() != olds.size()) {
    return Status::InvalidRequest("--count is given once per --old, or not at all");
  }
  for (size_t i = 0; i < olds.size(); ++i) {
    TextEdit e{olds[i], news[i], 1};
    if (!counts.empty()) {
      auto [end, ec] =
          std::from_chars(counts[i].data(), counts[i].data() + counts[i].size(), e.count);
      if (ec != std::errc() || end != counts[i].data() + counts[i].size() || e.count == 0) {
        return Status::InvalidRequest("--count takes a positive number, got '" + counts[i] + "'");
      }
    }
    req.edits.push_back(std::move(e));
  }
  std::vector<std::string> spans = args.All("lines");
  std::vector<std::string> texts = args.All("text");
  if (spans.size() != texts.size()) {
    return Status::InvalidRequest("each --lines needs its --text (" + std::to_string(spans.size()) +
                                  " --lines, " + std::to_string(texts.size()) + " --text)");
  }
  for (size_t i = 0; i < spans.size(); ++i) {
    std::optional<uint64_t> a, b;
    if (!ParseSpan(spans[i], &a, &b) || !a || !b) {
      return Status::InvalidRequest("--lines takes A:B (1-based, inclusive; B = A-1 inserts)");
    }
    req.line_edits.push_back(LineEdit{*a, *b, texts[i]});
  }
  if (req.edits.empty() && req.line_edits.empty()) {
    return Status::InvalidRequest("give at least one --old/--new or --lines/--text");
  }
  req.if_match = args.Get("if-match");
  return req;
}

}  // namespace

int CmdCat(Context& ctx) {
  client::ReadOptions o;
  if (auto lines = ctx.args().Get("lines")) {
    if (!ParseSpan(*lines, &o.start_line, &o.end_line)) {
      return ctx.out().UsageError("--lines takes A:B (1-based, inclusive; either may be empty)");
    }
  }
  if (auto bytes = ctx.args().Get("bytes")) {
    if (!ParseSpan(*bytes, &o.first_byte, &o.last_byte) || !o.first_byte) {
      return ctx.out().UsageError("--bytes takes A:B (0-based, inclusive; B may be empty)");
    }
  }
  const std::string& path = ctx.args().positional[0];
  if (ctx.out().json()) {
    Result<client::TaggedContent> data = ctx.client().ReadFileWithEtag(path, o);
    if (!data.ok()) return ctx.out().Fail(data.status());
    json::Object result;
    result.Set("path", path);
    result.Set("size", data->data.size());
    if (data->etag) result.Set("etag", *data->etag);
    result.Set("content", data->data);
    return ctx.out().Succeed(result, "");
  }
  Result<uint64_t> n = ctx.client().ReadFileTo(path, o, [](std::string_view b) {
    WriteAllTo(STDOUT_FILENO, b);
    return Status::Ok();
  });
  if (!n.ok()) return ctx.out().Fail(n.status());
  return kExitOk;
}

int CmdPut(Context& ctx) {
  const std::string& remote = ctx.args().positional[0];
  std::string source = ctx.args().positional.size() > 1 ? ctx.args().positional[1] : "-";
  client::WriteOptions w;
  if (auto mode = ctx.args().Get("mode")) {
    Result<uint32_t> m = ParseMode(*mode, "mode");
    if (!m.ok()) return ctx.out().UsageError("--mode takes octal digits like 0755");
    w.mode = *m;
  }
  w.parents = ctx.args().Has("parents");
  w.user = ctx.args().Get("user");
  w.group = ctx.args().Get("group");
  w.guard = GuardFrom(ctx.args());
  int fd = source == "-" ? STDIN_FILENO : ::open(source.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ctx.out().UsageError("cannot read " + source);
  std::vector<char> buf(256 * 1024);
  client::ByteSource read = [&]() -> Result<std::string_view> {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) return Status::Error(ErrorCode::kIoError, "cannot read " + source);
    return std::string_view(buf.data(), static_cast<size_t>(n));
  };
  Result<FileStat> st = ctx.client().WriteFileFrom(remote, read, w);
  if (fd != STDIN_FILENO) ::close(fd);
  if (!st.ok()) return ctx.out().Fail(st.status());
  return ctx.out().Succeed(EncodeFileStat(*st),
                           "wrote " + Output::HumanSize(st->size) + " to " + remote);
}

int CmdEdit(Context& ctx) {
  Result<EditRequest> req = EditFrom(ctx.args());
  if (!req.ok()) return ctx.out().UsageError(req.status().message());
  Result<EditResponse> r = ctx.client().Edit(*req);
  if (!r.ok()) return ctx.out().Fail(r.status());
  return ctx.out().Succeed(EncodeEditResponse(*r), r->diff + "etag " + r->etag);
}

int CmdStat(Context& ctx) {
  Result<FileStat> st = ctx.client().Stat(ctx.args().positional[0], ctx.args().Has("follow"));
  if (!st.ok()) return ctx.out().Fail(st.status());
  return ctx.out().Succeed(EncodeFileStat(*st), DescribeStat(*st));
}

int CmdLs(Context& ctx) {
  const std::string& path =
      ctx.args().positional.empty() ? std::string("/") : ctx.args().positional[0];
  Result<ListResponse> list = ctx.client().ListDir(path);
  if (!list.ok()) return ctx.out().Fail(list.status());
  std::vector<std::vector<std::string>> rows;
  for (const FileStat& e : list->entries) {
    std::string name = e.path;
    if (size_t slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
    if (e.target) name += " -> " + *e.target;
    rows.push_back({TypeLetter(e.type) + FormatMode(e.mode), std::to_string(e.uid),
                    std::to_string(e.gid), Output::HumanSize(e.size), FormatRfc3339(e.mtime),
                    name});
  }
  return ctx.out().Succeed(EncodeListResponse(*list), Output::Table(rows));
}

int CmdMkdir(Context& ctx) {
  MkdirRequest req;
  req.path = ctx.args().positional[0];
  req.parents = ctx.args().Has("parents");
  if (auto mode = ctx.args().Get("mode")) {
    Result<uint32_t> m = ParseMode(*mode, "mode");
    if (!m.ok()) return ctx.out().UsageError("--mode takes octal digits like 0755");
    req.mode = *m;
  }
  Result<FileStat> st = ctx.client().MakeDir(req);
  if (!st.ok()) return ctx.out().Fail(st.status());
  return ctx.out().Succeed(EncodeFileStat(*st), "created " + req.path);
}

int CmdMv(Context& ctx) {
  RenameRequest req;
  req.from = ctx.args().positional[0];
  req.to = ctx.args().positional[1];
  req.overwrite = !ctx.args().Has("no-clobber");
  Result<FileStat> st = ctx.client().Rename(req, GuardFrom(ctx.args()));
  if (!st.ok()) return ctx.out().Fail(st.status());
  return ctx.out().Succeed(EncodeFileStat(*st), req.from + " -> " + req.to);
}

int CmdRm(Context& ctx) {
  Result<DeleteResponse> r = ctx.client().Remove(
      ctx.args().positional[0], ctx.args().Has("recursive"), ctx.args().Get("if-match"));
  if (!r.ok()) return ctx.out().Fail(r.status());
  return ctx.out().Succeed(EncodeDeleteResponse(*r), "removed " + std::to_string(r->removed) +
                                                         (r->removed == 1 ? " entry" : " entries"));
}

}  // namespace agentd::cli
