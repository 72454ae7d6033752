// @agentd/client ETags, preconditions and edit() against the real daemon:
// a write guarded by a stale tag changes nothing, an edit lands whole or
// not at all, and the answers carry the tag of what is now on disk.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { Client } from "../src/index.js";
import { Daemon, rejection } from "./helpers.js";

let daemon: Daemon;
let c: Client;
let base: string;

before(async () => {
  daemon = await Daemon.start();
  c = await daemon.client();
  base = mkdtempSync(join(tmpdir(), "agentd-ts-edit-"));
});
after(async () => {
  c.close();
  await daemon.stop();
  rmSync(base, { recursive: true, force: true });
});

test("a read's etag guards a write: the stale tag is refused and the file kept", async () => {
  const path = join(base, "guarded.txt");
  writeFileSync(path, "one\n");
  const read = await c.readFileWithEtag(path);
  assert.equal(read.data.toString(), "one\n");
  assert.match(read.etag ?? "", /^"sha256:[0-9a-f]{64}"$/);
  assert.equal((await c.stat(path)).etag, read.etag);

  const written = await c.writeFile(path, "two\n", { ifMatch: read.etag! });
  assert.notEqual(written.etag, read.etag);
  const stale = await rejection(c.writeFile(path, "three\n", { ifMatch: read.etag! }));
  assert.equal(stale.code, "precondition_failed");
  assert.equal(stale.status, 412);
  assert.equal(stale.details.etag, written.etag);
  assert.equal(readFileSync(path, "utf8"), "two\n");

  const exists = await rejection(c.writeFile(path, "four\n", { ifNoneMatch: true }));
  assert.equal(exists.code, "precondition_failed");
  await c.writeFile(join(base, "created.txt"), "new\n", { ifNoneMatch: true });
  assert.equal(readFileSync(join(base, "created.txt"), "utf8"), "new\n");
});

test("a write with etag false answers no tag; a later stat hashes it; ifMatch still holds", async () => {
  const path = join(base, "untagged.bin");
  const data = Buffer.alloc((1 << 20) + 99);
  for (let i = 0; i < data.length; i++) data[i] = (i * 7 + (i >> 10)) & 0xff;
  const st = await c.writeFile(path, data, { etag: false });
  assert.equal(st.size, data.length);
  assert.equal(st.etag, undefined);
  assert.deepEqual(readFileSync(path), data);
  const tagged = await c.writeFile(join(base, "tagged.bin"), data);
  assert.match(tagged.etag ?? "", /^"sha256:[0-9a-f]{64}"$/);
  assert.equal((await c.stat(path)).etag, tagged.etag);

  const stale = await rejection(c.writeFile(path, "lost", { ifMatch: `"sha256:${"0".repeat(64)}"`, etag: false }));
  assert.equal(stale.code, "precondition_failed");
  assert.equal(stale.details.etag, tagged.etag);
  assert.deepEqual(readFileSync(path), data);
  const replaced = await c.writeFile(path, "new", { ifMatch: tagged.etag!, etag: false });
  assert.equal(replaced.etag, undefined);
  assert.equal(readFileSync(path, "utf8"), "new");
});

test("remove and rename honour ifMatch and ifNoneMatch", async () => {
  const path = join(base, "victim.txt");
  writeFileSync(path, "v1\n");
  const tag = (await c.stat(path)).etag!;
  writeFileSync(path, "v2\n");
  assert.equal((await rejection(c.remove(path, false, { ifMatch: tag }))).code, "precondition_failed");
  assert.equal(readFileSync(path, "utf8"), "v2\n");

  const other = join(base, "other.txt");
  writeFileSync(other, "x\n");
  const refused = await rejection(c.rename(path, other, undefined, { ifNoneMatch: true }));
  assert.equal(refused.code, "precondition_failed");
  assert.equal(readFileSync(other, "utf8"), "x\n");

  const current = (await c.stat(path)).etag!;
  assert.equal(await c.remove(path, false, { ifMatch: current }), 1);
});

test("edit applies text and line edits together and answers the new tag and a diff", async () => {
  const path = join(base, "app.py");
  writeFileSync(path, "def f():\n    return 1\n\nprint(f())\n");
  const before = (await c.stat(path)).etag!;
  const r = await c.edit(path, [{ old: "return 1", new: "return 2" }],
    { lineEdits: [{ startLine: 4, endLine: 4, text: "print(f() + 1)" }], ifMatch: before });
  assert.equal(readFileSync(path, "utf8"), "def f():\n    return 2\n\nprint(f() + 1)\n");
  assert.equal(r.etag, (await c.stat(path)).etag);
  assert.equal(r.size, readFileSync(path).length);
  assert.match(r.diff, /^-    return 1$/m);
  assert.match(r.diff, /^\+    return 2$/m);
});

test("an edit whose text is not found exactly count times changes nothing and says why", async () => {
  const path = join(base, "twice.txt");
  writeFileSync(path, "a\nx\nb\nx\n");
  const e = await rejection(c.edit(path, [{ old: "x", new: "y" }, { old: "a", new: "A" }]));
  assert.equal(e.code, "edit_mismatch");
  assert.equal(e.status, 409);
  assert.equal(e.details.found, 2);
  assert.equal(readFileSync(path, "utf8"), "a\nx\nb\nx\n");

  const ok = await c.edit(path, [{ old: "x", new: "y", count: 2 }]);
  assert.equal(readFileSync(path, "utf8"), "a\ny\nb\ny\n");
  const stale = await rejection(c.edit(path, [{ old: "a", new: "A" }], { ifMatch: `"sha256:${"0".repeat(64)}"` }));
  assert.equal(stale.code, "precondition_failed");
  assert.equal(stale.details.etag, ok.etag);
});
