// @agentd/client reset() against the real daemon: the next token installed
// and used, the last tenant's records gone, a retry answered from the record.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { AgentdError, Client } from "../src/index.js";
import { Daemon, TOKEN } from "./helpers.js";

let daemon: Daemon;

before(async () => {
  daemon = await Daemon.start();
});
after(async () => {
  await daemon.stop();
});

test("reset installs the next token, forgets the last tenant's execs, and a retry replays", async () => {
  const c = await daemon.client();
  const before = await c.run("echo tenant-a");
  assert.equal(before.exitCode, 0);
  const next = "ts-next-token-" + Date.now();
  const report = await c.reset({ resetId: "ts-reset-1", nextToken: next, env: { TENANT: "b" } });
  assert.equal(report.clean, true);
  assert.equal(report.generation, 1);
  assert.equal(report.replayed, false);
  assert.equal(report.removed.ipcObjects, 0);  // no --reset-ipc: System V objects are left alone
  assert.deepEqual(await c.listExecs(), []);
  const r = await c.run("echo $TENANT");
  assert.equal(r.stdout.toString(), "b\n");
  const old = new Client({ url: daemon.url, token: TOKEN });
  const again = await old.reset({ resetId: "ts-reset-1" });
  assert.equal(again.replayed, true);
  await assert.rejects(old.reset({ resetId: "ts-reset-2" }),
    (e: unknown) => e instanceof AgentdError && e.code === "unauthorized");
  old.close();
  c.close();
});

test("a second client keeps the retired token until setToken", async () => {
  // docs/CLIENT.md, "Tokens": only the client that reset switches.
  const fresh = await Daemon.start();
  try {
    const owner = await fresh.client();
    const worker = new Client({ url: fresh.url, token: TOKEN });
    assert.equal((await worker.run(["true"])).exitCode, 0);
    const next = "ts-second-" + Date.now();
    assert.equal((await owner.reset({ nextToken: next })).clean, true);
    await assert.rejects(worker.listExecs(), (e: unknown) => e instanceof AgentdError && e.code === "unauthorized");
    worker.setToken(next);
    assert.equal((await worker.run(["echo", "again"])).stdout.toString(), "again\n");
    worker.setToken(TOKEN); // and back: the retired one stays retired
    await assert.rejects(worker.listExecs(), (e: unknown) => e instanceof AgentdError && e.code === "unauthorized");
    owner.close();
    worker.close();
  } finally {
    await fresh.stop();
  }
});

test("a fresh guest: health says it is not bootstrapped, bootstrap installs the token the client then uses", async () => {
  const fresh = await Daemon.start();
  try {
    const c = new Client({ url: fresh.url });
    assert.equal((await c.health()).bootstrapped, false);
    await assert.rejects(c.listExecs(), (e: unknown) => e instanceof AgentdError && e.code === "not_bootstrapped");
    assert.equal((await c.bootstrap("ts-fresh-token", { TENANT: "a" })).replayed, false);
    assert.equal((await c.health()).bootstrapped, true);
    assert.equal((await c.run("echo $TENANT")).stdout.toString(), "a\n");
    assert.equal((await c.bootstrap("ts-fresh-token")).replayed, true);
    const other = new Client({ url: fresh.url });
    await assert.rejects(other.bootstrap("another-token"),
      (e: unknown) => e instanceof AgentdError && e.code === "already_bootstrapped");
    other.close();
    c.close();
  } finally {
    await fresh.stop();
  }
});

test("health says how each reset path is reset", async () => {
  const work = mkdtempSync(join(tmpdir(), "agentd-ts-work-"));
  const d = await Daemon.start("--reset-path", work);
  try {
    const c = await d.client();
    const h = await c.health();
    assert.deepEqual(h.resetPaths,
      [{ path: work, mode: "restore", overlayUnavailable: "--reset-overlay off" }]);
    c.close();
  } finally {
    await d.stop();
    rmSync(work, { recursive: true, force: true });
  }
});

test("health says how a reset ends the tenant's processes", async () => {
  const d = await Daemon.start("--reset-cgroup", "off");
  try {
    const c = await d.client();
    const h = await c.health();
    assert.deepEqual(h.resetProcesses, { mode: "subreaper", cgroupUnavailable: "--reset-cgroup off" });
    c.close();
  } finally {
    await d.stop();
  }
});
