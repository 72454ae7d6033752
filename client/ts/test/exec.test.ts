// @agentd/client against the real daemon: health, bootstrap, typed errors,
// retry-safe starts, polls, streams that survive cut connections byte for
// byte, reattach from persisted cursors, run, kill, ack, stdin by offset.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import * as agentd from "../src/index.js";
import { AgentdError, Client, mintExecId, type Cursors, type StreamEvent } from "../src/index.js";
import { CuttingProxy, Daemon, TOKEN } from "./helpers.js";

let daemon: Daemon;
let c: Client;
const tmp = mkdtempSync(join(tmpdir(), "agentd-ts-exec-"));

before(async () => {
  daemon = await Daemon.start();
  c = await daemon.client();
});
after(async () => {
  c.close();
  await daemon.stop();
  rmSync(tmp, { recursive: true, force: true });
});

async function rejectsWith(p: Promise<unknown>, code: string, status?: number): Promise<AgentdError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof AgentdError, String(e));
    assert.equal(e.code, code, e.message);
    if (status !== undefined) assert.equal(e.status, status);
    return e;
  }
  assert.fail(`expected ${code}`);
}

async function collect(events: AsyncIterable<StreamEvent>, from: Cursors = { stdout: 0, stderr: 0 }) {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const at = { ...from };
  const gaps: [string, number, number][] = [];
  let exitCode: number | null = null;
  let cursors: Cursors = { stdout: 0, stderr: 0 };
  for await (const ev of events) {
    if (ev.kind === "stdout" || ev.kind === "stderr") {
      assert.equal(ev.offset, at[ev.kind], "an event starts where the last ended");
      (ev.kind === "stdout" ? out : err).push(ev.data);
      at[ev.kind] += ev.data.length;
    } else if (ev.kind === "gap") {
      gaps.push([ev.stream, ev.from, ev.to]);
      at[ev.stream] = ev.to;
    } else {
      exitCode = ev.exec.exitCode;
    }
    assert.deepEqual(ev.cursors, at);
    cursors = ev.cursors;
  }
  return { out: Buffer.concat(out), err: Buffer.concat(err), gaps, exitCode, cursors };
}

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

/** A shell command printing n random bytes to stdout and n/3 to stderr, copies in files. */
function noisy(n: number, name: string) {
  const o = join(tmp, name + ".out");
  const e = join(tmp, name + ".err");
  return {
    command: `head -c ${n} /dev/urandom | tee ${o} & head -c ${Math.floor(n / 3)} /dev/urandom | tee ${e} >&2; wait`,
    expected: () => ({ out: readFileSync(o), err: readFileSync(e) }),
  };
}

describe("health and bootstrap", () => {
  test("health answers without a token", async () => {
    const h = await new Client({ url: daemon.url }).health();
    assert.equal(h.status, "ok");
    assert.equal(h.protocol, 1);
    assert.equal(h.bootstrapped, true);
    assert.equal(h.ackTtlSec, 60);
    assert.deepEqual(h.retention, { streamBytes: 256 << 20, totalBytes: 1 << 30 });
    // The interpreters' self-tests, decoded: the shell's ends (passed) and
    // names the file tested.
    let sh = h.runtimeSelfTests?.find((t) => t.runtime === "shell");
    for (let i = 0; i < 2400 && sh?.state === "pending"; i++) {
      await new Promise((r) => setTimeout(r, 50));
      sh = (await new Client({ url: daemon.url }).health()).runtimeSelfTests?.find((t) => t.runtime === "shell");
    }
    assert.equal(sh?.state, "passed");
    assert.match(sh?.program ?? "", /^\//);
    assert.equal(typeof sh?.durationMs, "number");
  });

  test("the same token replays and another is already_bootstrapped", async () => {
    const fresh = new Client({ url: daemon.url });
    assert.deepEqual(await fresh.bootstrap(TOKEN), { ok: true, replayed: true });
    await rejectsWith(fresh.bootstrap("other"), "already_bootstrapped", 409);
  });

  test("a wrong token is unauthorized with its status", async () => {
    await rejectsWith(new Client({ url: daemon.url, token: "wrong" }).listExecs(), "unauthorized", 401);
  });

  test("a daemon whose state directory takes no write answers its health, status and reason, not an error", async () => {
    // A daemon of its own: its state directory is swapped for a file.
    const d = await Daemon.start();
    const state = join(d.dir, "state");
    const c = new Client({ url: d.url });
    try {
      assert.equal((await c.health()).status, "ok");
      renameSync(state, `${state}.away`);
      writeFileSync(state, "not a directory");
      // The write probe runs at most every 250 ms: ask until it has (the
      // control is the "ok" above, from the same daemon and client).
      let h = await c.health();
      for (let i = 0; i < 400 && h.status === "ok"; i++) {
        await new Promise((r) => setTimeout(r, 50));
        h = await c.health();
      }
      assert.equal(h.status, "state_dir_unwritable");
      assert.equal(h.errno, "ENOTDIR");
      assert.match(h.reason ?? "", /Not a directory/);
      rmSync(state);
      renameSync(`${state}.away`, state);
    } finally {
      c.close();
      await d.stop();
    }
  });

  test("a refused connection is a transport_error after bounded retries", async () => {
    const dead = new Client({ url: "http://127.0.0.1:1", maxAttempts: 3, backoffInitialMs: 5 });
    const e = await rejectsWith(dead.health(), "transport_error", 0);
    assert.match(e.message, /ECONNREFUSED/);
  });
});

describe("exec", () => {
  test("minted ids are valid and distinct", () => {
    const a = mintExecId("job");
    assert.match(a, /^job-[0-9a-f]{11}-[0-9a-f]{16}$/);
    assert.notEqual(a, mintExecId("job"));
  });

  test("a repeated start answers the same exec; a different request conflicts", async () => {
    const id = mintExecId();
    const first = await c.startExec(id, { argv: ["sh", "-c", "echo once"] });
    const again = await c.startExec(id, { argv: ["sh", "-c", "echo once"] });
    assert.equal(first.pid, again.pid);
    const e = await rejectsWith(c.startExec(id, { argv: ["sh", "-c", "echo twice"] }), "exec_id_conflict", 409);
    assert.equal(e.details.id, id);
    assert.equal((await c.waitExec(id, 30000)).exitCode, 0);
  });

  test("a start retried after its answer was lost runs the command once", async () => {
    let first = true;
    const proxy = new CuttingProxy(daemon.port, () => (first ? ((first = false), 0) : undefined));
    const url = await proxy.listen();
    try {
      const k = new Client({ url, token: TOKEN, backoffInitialMs: 5 });
      const marker = join(tmp, "once-" + mintExecId());
      const id = mintExecId();
      await k.startExec(id, { command: `echo ran >> ${marker}` });
      assert.ok(proxy.connections >= 2 && proxy.cuts === 1, "the first answer was swallowed");
      assert.equal((await k.waitExec(id, 30000)).exitCode, 0);
      assert.equal(readFileSync(marker, "utf8"), "ran\n");
      k.close();
    } finally {
      proxy.close();
    }
  });

  test("bad requests carry the field; bad ids are refused before sending", async () => {
    const e = await rejectsWith(c.startExec(mintExecId(), { argv: ["true"], timeoutSec: 0 }), "invalid_request", 400);
    assert.equal(e.details.field, "timeout_sec");
    const bad = await rejectsWith(c.startExec("no spaces", { argv: ["true"] }), "invalid_request", 0);
    assert.equal(bad.details.field, "id");
  });

  test("poll reads from cursors and long polls", async () => {
    const id = mintExecId();
    await c.startExec(id, { command: "printf hello; printf oops >&2; sleep 0.3; echo late" });
    const early = await c.pollExec(id, { stdoutFrom: 0, stderrFrom: 0, waitMs: 10000 });
    assert.ok(early.stdout!.data.toString().startsWith("hello") || early.stderr!.data.length > 0);
    await c.waitExec(id, 30000);
    const r = await c.pollExec(id, { stdoutFrom: 1, stderrFrom: 0 });
    assert.equal(r.stdout!.data.toString(), "ello\nlate\n".replace("\n", ""));
    assert.equal(r.stderr!.data.toString(), "oops");
    assert.equal(r.exec.state, "exited");
  });

  test("kill, ack, released ids and running acks", async () => {
    const d = await Daemon.start("--ack-ttl-sec", "0");
    try {
      const k = await d.client();
      await rejectsWith(k.pollExec("never-started"), "exec_not_found", 404);
      const id = mintExecId();
      await k.startExec(id, { argv: ["sleep", "30"] });
      await rejectsWith(k.ackExec(id), "exec_running", 409);
      await k.killExec(id, { signal: "TERM" });
      const done = await k.waitExec(id, 30000);
      assert.deepEqual([done.exitCode, done.signal, done.killedBy], [143, "TERM", "kill"]);
      assert.equal((await k.ackExec(id)).acked, true);
      for (let i = 0; ; i++) {
        try {
          await k.pollExec(id);
        } catch (e) {
          assert.equal((e as AgentdError).code, "exec_released");
          break;
        }
        assert.ok(i < 200);
        await new Promise((r) => setTimeout(r, 50));
      }
      k.close();
    } finally {
      await d.stop();
    }
  });

  test("stdin by offset never duplicates a retried write", async () => {
    const id = mintExecId();
    await c.startExec(id, { argv: ["cat"], stdinStream: true });
    assert.equal(await c.writeStdin(id, 0, "hello "), 6);
    assert.equal(await c.writeStdin(id, 0, "hello world"), 11);
    const e = await rejectsWith(c.writeStdin(id, 50, "x"), "stdin_offset_mismatch", 409);
    assert.deepEqual([e.details.expected, e.details.got], [11, 50]);
    assert.equal(await c.writeStdin(id, 11, "\n", true), 12);
    await c.waitExec(id, 30000);
    assert.equal((await c.pollExec(id, { stdoutFrom: 0 })).stdout!.data.toString(), "hello world\n");
  });

  test("run returns the outcome and acks; timeouts are 124; output is bounded", async () => {
    const r = await c.run("echo out; echo err >&2; exit 3", { cwd: "/tmp", env: { A: "1" } });
    assert.deepEqual([r.exitCode, r.stdout.toString(), r.stderr.toString(), r.exec.acked], [3, "out\n", "err\n", true]);
    const t = await c.run(["sleep", "30"], { timeoutSec: 1, killGraceSec: 1 });
    assert.deepEqual([t.exitCode, t.timedOut, t.killedBy], [124, true, "timeout"]);
    const big = await c.run("head -c 100000 /dev/zero", { maxStdoutBytes: 1000 });
    assert.equal(big.stdout.length, 1000);
    assert.equal(big.stdoutTruncated, true);
    const bytes = await c.run(["cat"], { stdin: Buffer.from([0, 255, 1]) });
    assert.deepEqual([...bytes.stdout], [0, 255, 1]);
  });

  test("a restricted run reports the paths it saw read-only, as health lists them", async (t) => {
    if (process.getuid?.() !== 0) return t.skip("restricted execs need a root daemon");
    const health = await c.health();
    const listed = health.profiles?.restricted.readonlyPaths;
    assert.ok(Array.isArray(listed), "health lists profiles.restricted.readonlyPaths");
    const r = await c.run("true", { profile: "restricted" });
    assert.equal(r.exitCode, 0);
    assert.deepEqual(r.exec.restriction?.readonlyPaths, listed);
    assert.equal(r.exec.restriction?.seccomp, health.profiles?.restricted.seccomp);
    if (listed.length > 0) assert.ok(listed.includes("/usr"), String(listed));
    else assert.ok(health.profiles?.restricted.readonlyWhy, "an empty list says why");
  });

  test("an egress policy travels with the exec and its accounting names the refusal", async (t) => {
    const health = await c.health();
    if (!health.limits?.egressModes?.length) return t.skip(`no egress mode here: ${health.limits?.egressWhy}`);
    assert.ok(["bpf", "nftables"].includes(health.limits.egressEnforcer ?? ""),
      String(health.limits.egressEnforcer));
    // Under "none" a documentation address is refused with EPERM before any route is looked up.
    const code = "import socket\ntry: socket.create_connection(('192.0.2.7', 443), 20)\nexcept OSError: pass\n";
    const python = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    const r = await c.run([python, "-c", code], { egress: { mode: "none", deny: ["127.0.0.2"] } });
    assert.equal(r.exitCode, 0);
    assert.deepEqual(r.exec.egress, { mode: "none", allow: [], deny: ["127.0.0.2"], dns: false });
    const report = await c.execEgress(r.exec.id);
    assert.deepEqual([report.accounting, report.refused, report.allowed], [true, 1, 0]);
    const d = report.destinations[0];
    assert.deepEqual([d.family, d.protocol, d.address, d.port, d.verdict, d.count],
      ["ipv4", "tcp", "192.0.2.7", 443, "refused", 1]);
    const plain = await c.run("true");
    assert.equal((await c.execEgress(plain.exec.id)).accounting, false);
  });

  test("a host name in an egress rule is resolved at start; one without an address is EgressNameUnresolved", async (t) => {
    const health = await c.health();
    if (!health.limits?.egressModes?.length) return t.skip(`no egress mode here: ${health.limits?.egressWhy}`);
    if (!/^127\.0\.0\.1\s.*\blocalhost\b/m.test(readFileSync("/etc/hosts", "utf8"))) {
      return t.skip("/etc/hosts does not name localhost 127.0.0.1 here");
    }
    const r = await c.run("true", { egress: { mode: "none", deny: ["localhost:9"] } });
    assert.equal(r.exitCode, 0);
    assert.deepEqual(Object.keys(r.exec.egress?.resolved ?? {}), ["localhost"]);
    assert.ok(r.exec.egress?.resolved?.localhost?.includes("127.0.0.1"), JSON.stringify(r.exec.egress));
    assert.deepEqual((await c.execEgress(r.exec.id)).policy?.resolved, r.exec.egress?.resolved);
    await assert.rejects(c.run("true", { egress: { mode: "all", deny: ["no-such-host.invalid"] } }), (e: unknown) => {
      assert.ok(e instanceof agentd.EgressNameUnresolved, String(e));
      assert.equal((e as AgentdError).details.name, "no-such-host.invalid");
      return true;
    });
  });

  test("run carries output beyond one start-and-wait answer on through the stream, byte for byte", async () => {
    const job = noisy(3 << 20, "run-beyond"); // over the 1 MiB a poll answer carries per stream
    const r = await c.run(job.command);
    const want = job.expected();
    assert.equal(r.exitCode, 0);
    assert.equal(sha(r.stdout), sha(want.out));
    assert.equal(sha(r.stderr), sha(want.err));
    assert.deepEqual([r.stdoutTruncated, r.stderrTruncated, r.exec.acked], [false, false, true]);
  });

  test("runCode answers a summary, bounded output and the changed files", async () => {
    const work = mkdtempSync(join(tmp, "run-"));
    const r = await c.runCode("shell", "echo hi; echo made > made.txt; echo oops >&2; exit 2",
      { cwd: work, timeoutSec: 10 });
    assert.deepEqual([r.exitCode, r.success, r.stdout, r.stderr], [2, false, "hi\n", "oops\n"]);
    assert.match(r.summary, /^exit 2 in \d+ ms; 1 file changed: oops$/);
    assert.deepEqual(r.changedFiles, [{ path: "made.txt", change: "added", type: "file" }]);
    assert.deepEqual([r.runtime, r.timeoutSec, r.stdoutBytes, r.stderrBytes], ["shell", 10, 3, 5]);
    const py = await c.runCode("python", "import sys; print(sys.stdin.read().upper())",
      { cwd: work, stdin: "quiet", scanChanges: false });
    assert.deepEqual([py.exitCode, py.success, py.stdout, py.changedFiles], [0, true, "QUIET\n", []]);
    const e = await rejectsWith(c.runCode("cobol" as "shell", "x"), "invalid_request", 400);
    assert.equal(e.details.field, "runtime");
  });

  test("runCode reports artifacts by content when asked", async () => {
    const work = mkdtempSync(join(tmp, "artifacts-"));
    const r = await c.runCode("shell", "mkdir out; printf '[1, 2]' > out/r.dat", { cwd: work, artifactsDir: "out" });
    assert.deepEqual(r.artifacts, [{
      path: "out/r.dat", mediaType: "application/json", bytes: 6,
      sha256: "3a316d6d3226f84c1e46e4447fa8d5fd800bff4a1bc6498152523cd4a602b69b",
    }]);
    assert.deepEqual([r.artifactsTruncated, r.artifactsBound], [false, null]);
    assert.equal((await c.runCode("shell", "true", { cwd: work })).artifacts, undefined);
  });

  test("limits ride on runs and execs, and the one that ended them is reported", async () => {
    const r = await c.runCode("shell", "yes", { outputBytes: 4096, killOnOutput: true, timeoutSec: 30 });
    assert.deepEqual([r.success, r.killedBy, r.limit], [false, "output", { name: "output", value: 4096, unit: "bytes" }]);
    const x = await c.run(["sh", "-c", "sleep 30"], { timeoutSec: 1, outputBytes: 8192 });
    assert.deepEqual([x.exitCode, x.timedOut, x.killedBy], [124, true, "timeout"]);
    assert.deepEqual(x.exec.limit, { name: "timeout", value: 1, unit: "s" });
    assert.deepEqual(x.exec.limits, { timeoutSec: 1, outputBytes: 8192 });
    if ((await c.health()).limits!.supported.includes("disk")) {
      const d = await c.runCode("shell", "head -c 2000000 /dev/zero > /tmp/fill", { diskBytes: 1 << 20, timeoutSec: 30 });
      assert.deepEqual([d.killedBy, d.limit], ["disk", { name: "disk", value: 1 << 20, unit: "bytes" }]);
      const m = await c.run(["sh", "-c", "stat -f -c %T /mnt"], { diskBytes: 1 << 20, diskPath: "/mnt" });
      assert.deepEqual([m.exitCode, m.stdout.toString()], [0, "tmpfs\n"]);
      assert.deepEqual(m.exec.limits, { diskBytes: 1 << 20, diskPath: "/mnt" });
    }
  });

  test("a detached code exec streams like any exec", async () => {
    const id = mintExecId("code");
    await c.startExec(id, { runtime: "python", code: "print(6 * 7)" });
    assert.equal((await c.startExec(id, { runtime: "python", code: "print(6 * 7)" })).id, id);
    const r = await collect(c.stream(id));
    assert.deepEqual([r.out.toString(), r.exitCode], ["42\n", 0]);
  });

  test("health reports the limit mechanism", async () => {
    const h = await c.health();
    assert.ok(["cgroup2", "cgroup1", "rlimit"].includes(h.limits!.mechanism));
    assert.ok(h.limits!.supported.includes("output"));
    assert.equal(h.limits!.runTimeoutSec, 60);
  });
});

describe("streams", () => {
  test("every byte arrives exactly once through connections cut at random", async () => {
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const proxy = new CuttingProxy(daemon.port, () => 1 + Math.floor(rand() * 400000));
    const url = await proxy.listen();
    try {
      const cut = new Client({ url, token: TOKEN, backoffInitialMs: 5, backoffMaxMs: 50, maxStreamReconnects: 50 });
      const id = mintExecId("cut");
      const job = noisy(3 << 20, id);
      await cut.startExec(id, { command: job.command });
      const reconnects: string[] = [];
      const got = await collect(cut.stream(id, undefined, { onReconnect: (_a, why) => reconnects.push(why.code) }));
      const want = job.expected();
      assert.equal(got.out.length, want.out.length);
      assert.equal(sha(got.out), sha(want.out));
      assert.equal(sha(got.err), sha(want.err));
      assert.deepEqual(got.gaps, []);
      assert.equal(got.exitCode, 0);
      assert.ok(proxy.cuts > 3, `the proxy cut ${proxy.cuts} times`);
      assert.ok(reconnects.length > 3);
      cut.close();
    } finally {
      proxy.close();
    }
  });

  test("a fresh client reattaches from the persisted id and cursors", async () => {
    const id = mintExecId("reattach");
    const job = noisy(1 << 20, id);
    await c.startExec(id, { command: job.command });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let saved: { id: string; cursors: Cursors } = { id, cursors: { stdout: 0, stderr: 0 } };
    let n = 0;
    for await (const ev of c.stream(id)) {
      if (ev.kind === "stdout") out.push(ev.data);
      if (ev.kind === "stderr") err.push(ev.data);
      saved = JSON.parse(JSON.stringify({ id, cursors: ev.cursors }));
      if (++n === 5) break; // the harness "crashes" here
    }
    const fresh = new Client({ url: daemon.url, token: TOKEN });
    const rest = await collect(fresh.stream(saved.id, saved.cursors), saved.cursors);
    const want = job.expected();
    assert.equal(sha(Buffer.concat([...out, rest.out])), sha(want.out));
    assert.equal(sha(Buffer.concat([...err, rest.err])), sha(want.err));
    fresh.close();
  });

  test("a stream from before the retained bytes starts with a gap", async () => {
    const d = await Daemon.start("--retention-stream-bytes", "4096");
    try {
      const k = await d.client();
      const id = mintExecId();
      await k.startExec(id, { command: "head -c 20000 /dev/zero | tr '\\0' a" });
      const info = await k.waitExec(id, 30000);
      const got = await collect(k.stream(id));
      assert.deepEqual(got.gaps, [["stdout", 0, info.stdoutRetainedFrom]]);
      assert.equal(got.out.length, 20000 - info.stdoutRetainedFrom);
      assert.equal(got.cursors.stdout, 20000);
      k.close();
    } finally {
      await d.stop();
    }
  });

  test("a stream of a dead daemon gives up after its reconnect bound", async () => {
    const d = await Daemon.start();
    const k = await d.client();
    const url = d.url;
    const id = mintExecId();
    await k.startExec(id, { argv: ["sleep", "30"] });
    await d.stop();
    const dead = new Client({ url, token: TOKEN, maxAttempts: 1, backoffInitialMs: 1, backoffMaxMs: 2, maxStreamReconnects: 3 });
    const attempts: number[] = [];
    const e = await rejectsWith(collect(dead.stream(id, undefined, { onReconnect: (a) => attempts.push(a) })),
      "transport_error");
    assert.deepEqual(attempts, [1, 2, 3]);
    assert.equal(e.details.reconnects, 3);
    k.close();
  });

  test("a Unix socket endpoint works", async () => {
    const sock = join(tmp, "agentd.sock");
    const d = await Daemon.start("--listen", `unix:${sock}`);
    try {
      const u = new Client({ url: `unix:${sock}` });
      await u.bootstrap(TOKEN);
      assert.equal((await u.run(["echo", "via unix"])).stdout.toString(), "via unix\n");
      u.close();
    } finally {
      await d.stop();
    }
  });
});

describe("server-side waits", () => {
  test("waitForOutput finds a match split across two output chunks", async () => {
    const marker = join(tmp, "go-wait");
    const id = mintExecId("tsw");
    await c.startExec(id, { command: `printf rea; while [ ! -e ${marker} ]; do sleep 0.01; done; printf 'dy\\n'; sleep 600` });
    try {
      while ((await c.pollExec(id, { stdoutFrom: 0, waitMs: 10000 })).stdout!.next < 3);
      const early = await c.waitForOutput(id, "ready", { timeoutMs: 0 });
      assert.deepEqual([early.matched, early.reason, early.next], [false, "timeout", 0]);
      const waiting = c.waitForOutput(id, "re.dy");
      writeFileSync(marker, "");
      const m = await waiting;
      assert.deepEqual([m.matched, m.text?.toString(), m.offset, m.end], [true, "ready", 0, 5]);
      assert.equal(m.exec.state, "running");
    } finally {
      await c.killExec(id, { signal: "KILL" });
    }
  });

  test("waitForPath and waitForPort", async () => {
    const flag = join(tmp, "flag");
    assert.equal(await c.waitForPath(flag, { timeoutMs: 0 }), false);
    const waiting = c.waitForPath(flag);
    writeFileSync(flag, "x");
    assert.equal(await waiting, true);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      assert.equal(await c.waitForPort(port, 60000), true);
    } finally {
      server.close();
    }
  });
});

describe("a guest without seccomp (tests/lib/no_seccomp.py)", () => {
  // The daemon runs under a filter that makes seccomp(2) answer ENOSYS.
  const wrapper = ["python3", join(process.env.AGENTD_TS_PACKAGE_DIR ?? ".", "..", "..", "tests", "lib",
    "no_seccomp.py")];

  test("--restricted-without-seccomp runs a restricted exec and says the filter is missing", async (t) => {
    if (process.getuid?.() !== 0) return t.skip("restricted execs need a root daemon");
    const d = await Daemon.startUnder(wrapper, "--restricted-without-seccomp");
    const wc = await d.client();
    try {
      const health = await wc.health();
      assert.deepEqual([health.profiles?.restricted.available, health.profiles?.restricted.seccomp],
        [true, false]);
      const r = await wc.run("id -u", { profile: "restricted" });
      assert.equal(r.exitCode, 0);
      assert.equal(r.exec.restriction?.seccomp, false);
      assert.match(r.exec.restriction?.seccompWhy ?? "", /no seccomp support/);
      assert.equal(r.exec.restriction?.seccompRefusedSyscalls, 0);
      assert.equal(r.exec.restriction?.capabilities, "none");
    } finally {
      wc.close();
      await d.stop();
    }
  });
});
