// Checks of ETags, preconditions and edits (docs/PROTOCOL.md, "ETags and
// preconditions" and "Edit"): what an agent's read-modify-write relies on.
#include "checks.h"
#include "suite.h"

namespace agentd::conformance {
namespace {

std::string ReadWhole(CheckContext& ctx, const std::string& path) {
  return ExpectOk(ctx.client().ReadFile(path), "reading " + path);
}

// The number a detail holds, or -1 when it is absent or not a number.
int64_t DetailInt(const Status& s, std::string_view key) {
  const json::Value* v = s.details().Find(key);
  return v != nullptr && v->is_int() ? v->as_int() : -1;
}

void StaleTagIsRefusedAndTheFileKept(CheckContext& ctx) {
  std::string path = ctx.Scratch("guarded.txt");
  ExpectOk(ctx.client().WriteFile(path, "one\n"), "first write");
  client::TaggedContent read = ExpectOk(ctx.client().ReadFileWithEtag(path), "read with etag");
  Expect(read.etag.has_value(), "a regular file's read answers an ETag");
  FileStat st = ExpectOk(ctx.client().Stat(path), "stat");
  Expect(st.etag == read.etag, "stat answers the same tag as the read of the same bytes");

  client::WriteOptions guarded;
  guarded.guard.if_match = read.etag;
  FileStat written = ExpectOk(ctx.client().WriteFile(path, "two\n", guarded), "guarded write");
  Expect(written.etag.has_value() && written.etag != read.etag,
         "the write answers the new content's tag");
  Status stale = ExpectErrorStatus(ctx.client().WriteFile(path, "three\n", guarded),
                                   ErrorCode::kPreconditionFailed, "a write with the stale tag");
  Expect(stale.http_status() == 412, "precondition_failed is HTTP 412");
  Expect(ReadWhole(ctx, path) == "two\n", "the refused write changed nothing");

  client::WriteOptions create_only;
  create_only.guard.if_none_match = true;
  ExpectError(ctx.client().WriteFile(path, "four\n", create_only), ErrorCode::kPreconditionFailed,
              "If-None-Match: * on an existing file");
  ExpectError(ctx.client().Remove(path, false, read.etag), ErrorCode::kPreconditionFailed,
              "a delete with the stale tag");
  Expect(ReadWhole(ctx, path) == "two\n", "the refused delete changed nothing");
  ExpectOk(ctx.client().Remove(path, false, written.etag), "a delete with the current tag");
}

void EditLandsWholeOrNotAtAll(CheckContext& ctx) {
  std::string path = ctx.Scratch("app.py");
  std::string original = "def f():\n    return 1\n\nprint(f())\nx = 1\nx = 1\n";
  ExpectOk(ctx.client().WriteFile(path, original), "write");

  EditRequest bad;
  bad.path = path;
  bad.edits = {{"return 1", "return 2", 1}, {"x = 1", "x = 2", 1}};
  Status mismatch =
      ExpectErrorStatus(ctx.client().Edit(bad), ErrorCode::kEditMismatch, "an ambiguous edit");
  Expect(mismatch.http_status() == 409, "edit_mismatch is HTTP 409");
  Expect(DetailInt(mismatch, "edit") == 1 && DetailInt(mismatch, "found") == 2,
         "the mismatch names the edit (1) and the count found (2): " + mismatch.ToString());
  Expect(ReadWhole(ctx, path) == original,
         "a refused edit leaves the file as it was, first edit too");

  EditRequest good;
  good.path = path;
  good.edits = {{"return 1", "return 2", 1}, {"x = 1", "x = 2", 2}};
  good.line_edits = {{4, 4, "print(f() + 1)"}};
  good.if_match = ExpectOk(ctx.client().Stat(path), "stat").etag;
  EditResponse r = ExpectOk(ctx.client().Edit(good), "an edit with its precondition");
  std::string want = "def f():\n    return 2\n\nprint(f() + 1)\nx = 2\nx = 2\n";
  Expect(ReadWhole(ctx, path) == want, "every edit landed");
  Expect(r.size == want.size(), "the answer's size is the new content's");
  Expect(ExpectOk(ctx.client().Stat(path), "stat").etag == r.etag,
         "the answer's tag is the new content's");
  Expect(r.diff.find("\n-    return 1\n+    return 2\n") != std::string::npos,
         "the answer carries a unified diff of the change");
  ExpectError(ctx.client().Edit(good), ErrorCode::kPreconditionFailed,
              "the same edit again with the tag it was made against");
}

}  // namespace

void AddEditChecks(std::vector<Check>& checks) {
  checks.push_back({"edit", "a stale ETag is refused with 412 on write and delete, nothing changed",
                    StaleTagIsRefusedAndTheFileKept});
  checks.push_back({"edit", "an edit lands whole or not at all, with the new tag and a diff",
                    EditLandsWholeOrNotAtAll});
}

}  // namespace agentd::conformance
