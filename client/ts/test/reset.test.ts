// @agentd/client reset() against the real daemon: the next token installed
// and used, the last tenant's records gone, a retry answered from the record.
import assert from "node:assert/strict";
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
