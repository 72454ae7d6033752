// Checks of single files and metadata (docs/PROTOCOL.md, "Files").
#include <thread>

#include "checks.h"
#include "suite.h"

namespace agentd::conformance {
namespace {

std::string Read(CheckContext& ctx, const std::string& path, client::ReadOptions o = {}) {
  return ExpectOk(ctx.client().ReadFile(path, o), "reading " + path);
}

client::ReadOptions Lines(std::optional<uint64_t> a, std::optional<uint64_t> b) {
  client::ReadOptions o;
  o.start_line = a;
  o.end_line = b;
  return o;
}

void WriteAppliesExactModeAtOpen(CheckContext& ctx) {
  std::string path = ctx.Scratch("mode.sh");
  client::WriteOptions w;
  w.mode = 0751;
  FileStat st = ExpectOk(ctx.client().WriteFile(path, "#!/bin/sh\n", w), "write with mode 0751");
  Expect(st.mode == 0751, "the answer's mode is 0751, got " + FormatMode(st.mode));
  FileStat again = ExpectOk(ctx.client().Stat(path), "stat");
  Expect(again.mode == 0751,
         "the file's mode is exactly 0751 (no umask), got " + FormatMode(again.mode));
  w.mode = 0600;
  ExpectOk(ctx.client().WriteFile(path, "x", w), "rewrite with mode 0600");
  Expect(ExpectOk(ctx.client().Stat(path), "stat").mode == 0600, "a rewrite applies its mode");
}

void WriteIsAtomicAndLeavesNoTemporary(CheckContext& ctx) {
  std::string dir = ctx.Scratch("atomic");
  MkdirRequest mk;
  mk.path = dir;
  ExpectOk(ctx.client().MakeDir(mk), "mkdir");
  ExpectOk(ctx.client().WriteFile(dir + "/f", "old contents"), "first write");
  ExpectOk(ctx.client().WriteFile(dir + "/f", std::string(1 << 20, 'n')), "replacing write");
  Expect(Read(ctx, dir + "/f") == std::string(1 << 20, 'n'), "the file holds the new bytes");
  ListResponse list = ExpectOk(ctx.client().ListDir(dir), "list");
  Expect(list.entries.size() == 1, "no temporary file remains beside the target (" +
                                       std::to_string(list.entries.size()) + " entries)");
  // A dropped upload leaves the old file.
  std::string raw =
      ctx.RawExchange("PUT /v1/fs/file?path=" + dir +
                          "/f HTTP/1.1\r\nHost: x\r\n"
                          "Authorization: Bearer " +
                          ctx.options().token + "\r\nContent-Length: 1000000\r\n\r\npartial",
                      std::chrono::milliseconds(300));
  (void)raw;  // the connection closes here, mid-body
  for (int i = 0; i < 50; ++i) {
    list = ExpectOk(ctx.client().ListDir(dir), "list");
    if (list.entries.size() == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  Expect(Read(ctx, dir + "/f") == std::string(1 << 20, 'n'),
         "a dropped upload leaves the old file");
  Expect(list.entries.size() == 1, "and no temporary behind");
}

void LineRangesFollowTheContract(CheckContext& ctx) {
  std::string path = ctx.Scratch("lines.txt");
  ExpectOk(ctx.client().WriteFile(path, "one\r\ntwo\nthree"), "write");
  Expect(Read(ctx, path, Lines(1, 1)) == "one\r\n", "CRLF lines come back byte-identical");
  Expect(Read(ctx, path, Lines(2, 3)) == "two\nthree", "the last line may lack a newline");
  Expect(Read(ctx, path, Lines(2, 99)) == "two\nthree", "end_line past EOF reads through EOF");
  Expect(Read(ctx, path, Lines(4, std::nullopt)).empty(), "start_line past EOF is empty");
  Expect(Read(ctx, path, Lines(2, std::nullopt)) == "two\nthree", "no end_line reads to EOF");
  ExpectError(ctx.client().ReadFile(path, Lines(0, 1)), ErrorCode::kInvalidRange, "start_line 0");
  ExpectError(ctx.client().ReadFile(path, Lines(3, 2)), ErrorCode::kInvalidRange,
              "end_line before start_line");
  std::string empty = ctx.Scratch("empty.txt");
  ExpectOk(ctx.client().WriteFile(empty, ""), "write an empty file");
  Expect(Read(ctx, empty, Lines(1, 1)).empty(), "an empty file has no lines");
  Expect(Read(ctx, path) == "one\r\ntwo\nthree", "the un-ranged read is byte-identical");
}

void ByteRangesAnswer206And416(CheckContext& ctx) {
  std::string path = ctx.Scratch("bytes.bin");
  ExpectOk(ctx.client().WriteFile(path, "0123456789"), "write");
  client::ReadOptions o;
  o.first_byte = 3;
  o.last_byte = 5;
  Expect(Read(ctx, path, o) == "345", "bytes=3-5 gives 345");
  o.last_byte.reset();
  Expect(Read(ctx, path, o) == "3456789", "bytes=3- gives the rest");
  o.first_byte = 10;
  ExpectError(ctx.client().ReadFile(path, o), ErrorCode::kRangeNotSatisfiable,
              "a range starting at the end");
}

void ReadErrorsNameThePath(CheckContext& ctx) {
  std::string missing = ctx.Scratch("missing");
  Status s =
      ExpectErrorStatus(ctx.client().ReadFile(missing), ErrorCode::kNotFound, "a missing file");
  Expect(s.details().Find("path") != nullptr, "not_found names the path");
  std::string dir = ctx.Scratch("a-dir");
  MkdirRequest mk;
  mk.path = dir;
  ExpectOk(ctx.client().MakeDir(mk), "mkdir");
  ExpectError(ctx.client().ReadFile(dir), ErrorCode::kIsDirectory, "reading a directory");
}

void StatDescribesSymlinksUnlessFollowed(CheckContext& ctx) {
  std::string dir = ctx.Scratch("links");
  MkdirRequest mk;
  mk.path = dir;
  ExpectOk(ctx.client().MakeDir(mk), "mkdir");
  ExpectOk(ctx.client().WriteFile(dir + "/target", "12345"), "write");
  ExecStartRequest ln;
  ln.argv = {"ln", "-s", "target", dir + "/link"};
  client::RunResult r = ExpectOk(ctx.client().Run(ln), "ln -s");
  if (r.exit_code != 0) throw CheckSkipped{"the guest has no ln"};
  FileStat l = ExpectOk(ctx.client().Stat(dir + "/link"), "stat the link");
  Expect(l.type == FileStat::Type::kSymlink && l.target == "target",
         "stat describes the link itself");
  FileStat f = ExpectOk(ctx.client().Stat(dir + "/link", true), "stat with follow");
  Expect(f.type == FileStat::Type::kFile && f.size == 5, "follow=1 describes the target");
}

void MetadataOpsAndTheirErrors(CheckContext& ctx) {
  std::string dir = ctx.Scratch("meta");
  MkdirRequest mk;
  mk.path = dir + "/x/y";
  mk.parents = true;
  mk.mode = 0750;
  FileStat made = ExpectOk(ctx.client().MakeDir(mk), "mkdir with parents");
  Expect(made.mode == 0750, "mkdir applies its mode");
  mk.parents = false;
  ExpectError(ctx.client().MakeDir(mk), ErrorCode::kAlreadyExists,
              "mkdir of an existing directory");
  ExpectOk(ctx.client().WriteFile(dir + "/x/f", "f"), "write");
  RenameRequest mv;
  mv.from = dir + "/x/f";
  mv.to = dir + "/x/g";
  ExpectOk(ctx.client().Rename(mv), "rename");
  ExpectError(ctx.client().Stat(dir + "/x/f"), ErrorCode::kNotFound, "the old name");
  ExpectError(ctx.client().Remove(dir + "/x"), ErrorCode::kDirectoryNotEmpty,
              "non-recursive delete");
  std::string real = ExpectOk(ctx.client().Realpath(dir + "/x/y/../g"), "realpath");
  Expect(real.size() >= 4 && real.compare(real.size() - 4, 4, "/x/g") == 0, "realpath resolves ..");
  ListResponse list = ExpectOk(ctx.client().ListDir(dir + "/x"), "list");
  Expect(list.entries.size() == 2, "list shows both entries");
  DeleteResponse del = ExpectOk(ctx.client().Remove(dir, true), "recursive delete");
  Expect(del.removed == 4,
         "recursive delete counts every entry, got " + std::to_string(del.removed));
}

void RecursiveDeleteNeverFollowsSymlinksOut(CheckContext& ctx) {
  std::string keep = ctx.Scratch("keep");
  std::string tree = ctx.Scratch("doomed");
  MkdirRequest mk;
  mk.path = keep;
  ExpectOk(ctx.client().MakeDir(mk), "mkdir keep");
  ExpectOk(ctx.client().WriteFile(keep + "/precious", "data"), "write precious");
  mk.path = tree;
  ExpectOk(ctx.client().MakeDir(mk), "mkdir doomed");
  ExecStartRequest ln;
  ln.argv = {"ln", "-s", keep, tree + "/escape"};
  if (ExpectOk(ctx.client().Run(ln), "ln -s").exit_code != 0) throw CheckSkipped{"no ln"};
  ExpectOk(ctx.client().Remove(tree, true), "recursive delete");
  Expect(Read(ctx, keep + "/precious") == "data", "the symlink's target was not touched");
}

void DiskPressureIs507WithRealNumbers(CheckContext& ctx) {
  const std::string& dir = ctx.suite().options().small_fs;
  if (dir.empty()) throw CheckSkipped{"no --small-fs directory given"};
  std::string path = dir + "/agentd-conformance-" + ctx.suite().run_tag();
  // Announced with its length, refused before a byte is written.
  std::string big(64u << 20, 'x');
  Status s = ExpectErrorStatus(ctx.client().WriteFile(path, big), ErrorCode::kInsufficientStorage,
                               "a 64 MiB write to a small file system");
  const json::Value* needed = s.details().Find("needed");
  const json::Value* available = s.details().Find("available");
  Expect(needed && available && needed->is_int() && available->is_int() &&
             needed->as_int() > available->as_int(),
         "507 carries needed > available in bytes");
  ExpectError(ctx.client().Stat(path), ErrorCode::kNotFound, "nothing was left behind");
  // Streamed without a length: refused when the disk fills, then cleaned up.
  size_t sent = 0;
  client::ByteSource source = [&]() -> Result<std::string_view> {
    if (sent >= big.size()) return std::string_view();
    sent += 1 << 20;
    return std::string_view(big.data(), 1 << 20);
  };
  ExpectError(ctx.client().WriteFileFrom(path, source), ErrorCode::kInsufficientStorage,
              "a streamed write that fills the file system");
  ListResponse left = ExpectOk(ctx.client().ListDir(dir), "list the small file system");
  for (const FileStat& e : left.entries) {
    Expect(e.path.find("agentd-tmp") == std::string::npos, "no temporary remains: " + e.path);
  }
  ExpectOk(ctx.client().WriteFile(path, "small"), "the daemon still writes what fits");
  ExpectOk(ctx.client().Remove(path), "cleanup");
}

}  // namespace

void AddFileChecks(std::vector<Check>& checks) {
  checks.push_back(
      {"files", "a write applies exactly the mode asked for", WriteAppliesExactModeAtOpen});
  checks.push_back({"files", "a write replaces atomically and leaves no temporary",
                    WriteIsAtomicAndLeavesNoTemporary});
  checks.push_back({"files", "line ranges are 1-based, inclusive, through EOF, empty past it",
                    LineRangesFollowTheContract});
  checks.push_back({"files", "byte ranges answer the range or range_not_satisfiable",
                    ByteRangesAnswer206And416});
  checks.push_back(
      {"files", "read errors are not_found and is_directory with the path", ReadErrorsNameThePath});
  checks.push_back(
      {"files", "stat describes a symlink unless follow=1", StatDescribesSymlinksUnlessFollowed});
  checks.push_back({"files", "mkdir, rename, list, realpath and delete with their errors",
                    MetadataOpsAndTheirErrors});
  checks.push_back({"files", "a recursive delete never follows a symlink out of the tree",
                    RecursiveDeleteNeverFollowsSymlinksOut});
  checks.push_back({"disk",
                    "writes beyond free space are 507 with needed and available, leaving nothing",
                    DiskPressureIs507WithRealNumbers});
}

}  // namespace agentd::conformance
