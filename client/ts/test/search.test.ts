// @agentd/client search and glob against the real daemon, and a search
// stream cut before its summary throwing instead of answering part of it.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { after, before, describe, test } from "node:test";

import { AgentdError, Client } from "../src/index.js";
import { Daemon, TOKEN } from "./helpers.js";

let daemon: Daemon;
let c: Client;
let base: string;

before(async () => {
  daemon = await Daemon.start();
  c = await daemon.client();
  base = mkdtempSync(join(tmpdir(), "agentd-ts-search-"));
  for (const [rel, text] of [["a.ts", "let x;\nlet needle;\n"], ["b.md", "Needle\n"],
    ["dist/c.ts", "needle\n"], [".gitignore", "dist/\n"]]) {
    mkdirSync(dirname(join(base, rel)), { recursive: true });
    writeFileSync(join(base, rel), text);
  }
});
after(async () => {
  c.close();
  await daemon.stop();
  rmSync(base, { recursive: true, force: true });
});

describe("search", () => {
  test("matches with line, column and context, then the summary", async () => {
    const seen: number[] = [];
    const r = await c.search(base, "needle", { context: 1, onMatch: (m) => seen.push(m.line) });
    assert.deepEqual(r.matches.map((m) => [relative(base, m.path), m.line, m.column, m.text]),
      [["a.ts", 2, 5, "let needle;"]]);
    assert.deepEqual(r.matches[0].before, ["let x;"]);
    assert.deepEqual(seen, [2]);
    assert.deepEqual([r.summary.matches, r.summary.truncated, r.summary.bound], [1, false, null]);
  });

  test("options reach the daemon", async () => {
    let r = await c.search(base, "needle", { ignoreCase: true, gitignore: false, glob: ["*.md", "*.ts"] });
    assert.deepEqual(r.matches.map((m) => relative(base, m.path)), ["a.ts", "b.md", "dist/c.ts"]);
    r = await c.search(base, "needle", { gitignore: false, maxResults: 1 });
    assert.equal(r.summary.bound, "results");
    await assert.rejects(c.search(base, "a(b"), (e: unknown) =>
      e instanceof AgentdError && e.code === "invalid_request" && e.details.field === "pattern");
  });

  test("glob answers sorted stats", async () => {
    const g = await c.glob(base, "**/*.{ts,md}", { gitignore: false });
    assert.deepEqual(g.entries.map((e) => relative(base, e.path)), ["a.ts", "b.md", "dist/c.ts"]);
    assert.equal(g.entries[0].type, "file");
    assert.equal(g.truncated, false);
  });

  test("a stream without its summary throws", async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { "Content-Type": "application/x-ndjson" });
      res.end('{"type":"match","path":"/x","line":1,"column":1,"text":"t","cut":false}\n');
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const fake = new Client({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: TOKEN });
    try {
      await assert.rejects(fake.search("/x", "t"), (e: unknown) =>
        e instanceof AgentdError && e.code === "protocol_error");
    } finally {
      fake.close();
      server.close();
    }
  });
});
