// @agentd/client stateful contexts against the real daemon: names kept
// between runs, a retried run id replayed, typed errors once it ended.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { after, before, test } from "node:test";

import { ContextGone, ContextIdConflict, ContextNotFound, RunIdConflict } from "../src/index.js";
import { Daemon } from "./helpers.js";

let daemon: Daemon;

before(async () => {
  daemon = await Daemon.start();
});
after(async () => {
  await daemon.stop();
});

test("a context keeps its names, replays a run id and ends with typed errors", async () => {
  const c = await daemon.client();
  const info = await c.createContext("ts-keep");
  assert.equal(info.state, "ready");
  assert.equal((await c.createContext("ts-keep")).pid, info.pid);
  await assert.rejects(c.createContext("ts-keep", "python", { cwd: "/tmp" }), ContextIdConflict);
  await c.runInContext("ts-keep", "n = 1");
  const first = await c.runInContext("ts-keep", "n += 1\nprint(n)", { runId: "once" });
  const again = await c.runInContext("ts-keep", "n += 1\nprint(n)", { runId: "once" });
  assert.equal(first.stdout, "2\n");
  assert.equal(again.stdout, "2\n");
  await assert.rejects(c.runInContext("ts-keep", "n = 0", { runId: "once" }), RunIdConflict);
  const failed = await c.runInContext("ts-keep", "x = 1\nmissing_name");
  assert.equal(failed.exception?.type, "NameError");
  assert.equal(failed.exception?.line, 2);
  assert.deepEqual((await c.listContexts()).map((x) => x.id), ["ts-keep"]);
  const dead = await c.runInContext("ts-keep", "import time\ntime.sleep(30)", { timeoutSec: 1 });
  assert.equal(dead.killedBy, "timeout");
  await assert.rejects(c.runInContext("ts-keep", "print(n)"), ContextGone);
  assert.equal((await c.getContext("ts-keep")).endedReason, "limit");
  assert.equal((await c.resetContext("ts-keep")).state, "ready");
  assert.equal((await c.runInContext("ts-keep", "print('n' in dir())")).stdout, "False\n");
  assert.equal((await c.deleteContext("ts-keep")).endedReason, "deleted");
  await assert.rejects(c.getContext("ts-keep"), ContextNotFound);
  c.close();
});

const hasBun = (() => {
  try {
    execFileSync("bun", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

test("a ts context keeps its declarations between runs", { skip: hasBun ? false : "bun is not installed here" }, async () => {
  const c = await daemon.client();
  const info = await c.createContext("ts-bun", "ts");
  assert.equal(info.runtime, "ts");
  await c.runInContext("ts-bun", "let total: number = 40;\nfunction add(n: number) { total += n }");
  const r = await c.runInContext("ts-bun", "add(2);\nconsole.log(total)");
  assert.equal(r.stdout, "42\n");
  const failed = await c.runInContext("ts-bun", "const o: any = JSON.parse('null');\no.field;");
  assert.equal(failed.exception?.type, "TypeError");
  assert.equal(failed.exception?.file, "<cell 3>");
  assert.equal(failed.exception?.line, 2);
  assert.equal((await c.deleteContext("ts-bun")).endedReason, "deleted");
  c.close();
});
