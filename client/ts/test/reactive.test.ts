// @agentd/client against the real daemon: filesystem watch (and its
// reconnect through a cut connection), the guest's port list, tunnels and a
// local forward to a guest port, metrics, start-and-wait, reattach by id,
// streamed file reads and writes, retained output, typed error classes.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { after, before, describe, test } from "node:test";

import { Client, ExecNotFound, mintExecId, NotFound, type FsWatchEvent } from "../src/index.js";
import { CuttingProxy, Daemon, rejection, TOKEN } from "./helpers.js";

let daemon: Daemon;
let c: Client;
const tmp = mkdtempSync(join(tmpdir(), "agentd-ts-reactive-"));

before(async () => {
  daemon = await Daemon.start();
  c = await daemon.client();
});
after(async () => {
  c.close();
  await daemon.stop();
  rmSync(tmp, { recursive: true, force: true });
});

/** A host TCP server (the daemon runs on this host, so it is a "guest" port) answering "echo:" + what it read, at its end. */
async function echoServer(): Promise<{ port: number; server: net.Server }> {
  const server = net.createServer({ allowHalfOpen: true }, (s) => {
    const got: Buffer[] = [];
    s.on("data", (d: Buffer) => got.push(d));
    s.on("end", () => s.end(Buffer.concat([Buffer.from("echo:"), ...got])));
    s.on("error", () => s.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { port: (server.address() as net.AddressInfo).port, server };
}

/** Everything `s` sends until its end. */
function readToEnd(s: net.Socket): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const got: Buffer[] = [];
    s.on("data", (d: Buffer) => got.push(d));
    s.on("end", () => resolve(Buffer.concat(got)));
    s.on("error", reject);
  });
}

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe("watch", () => {
  test("reports changes made after it is ready, in order, and ends when the directory goes", async () => {
    const dir = join(tmp, "watched");
    mkdirSync(dir);
    const seen: FsWatchEvent[] = [];
    for await (const ev of c.watch(dir, {
      onReady: () => {
        writeFileSync(join(dir, "a.txt"), "1");
        renameSync(join(dir, "a.txt"), join(dir, "b.txt"));
        rmSync(dir, { recursive: true });
      },
    })) {
      seen.push(ev);
    }
    const kinds = seen.map((e) => `${e.kind} ${e.path}`);
    assert.equal(kinds[0], `created ${join(dir, "a.txt")}`, kinds.join(", "));
    const renamed = seen.find((e) => e.kind === "renamed");
    assert.ok(renamed, kinds.join(", "));
    assert.equal(renamed.from, join(dir, "a.txt"));
    assert.equal(renamed.path, join(dir, "b.txt"));
    assert.equal(renamed.type, "file");
    assert.equal(kinds.at(-1), `removed ${dir}`, "the last event names the watched directory");
    const ids = seen.map((e) => e.id);
    assert.deepEqual(ids, ids.map((_, i) => i + 1), "ids increase by one per event");
  });

  test("a recursive watch sees new subdirectories' files", async () => {
    const dir = join(tmp, "deep");
    mkdirSync(dir);
    const ac = new AbortController();
    const paths: string[] = [];
    try {
      for await (const ev of c.watch(dir, {
        recursive: true, signal: ac.signal,
        onReady: () => {
          mkdirSync(join(dir, "sub"));
          writeFileSync(join(dir, "sub", "f"), "x");
        },
      })) {
        paths.push(ev.path);
        if (ev.path === join(dir, "sub", "f")) break;
      }
    } finally {
      ac.abort();
    }
    assert.ok(paths.includes(join(dir, "sub")), paths.join(", "));
  });

  test("a cut connection is re-watched and reported as an overflow with reason reconnected", async () => {
    const dir = join(tmp, "cut");
    mkdirSync(dir);
    // The first watch's connection is cut once the watch is in place.
    const proxy = new CuttingProxy(daemon.port, () => undefined);
    const proxied: net.Socket[] = [];
    proxy.server.on("connection", (s: net.Socket) => proxied.push(s));
    const url = await proxy.listen();
    const viaProxy = new Client({ url, token: TOKEN, backoffInitialMs: 1, backoffMaxMs: 5 });
    const seen: FsWatchEvent[] = [];
    let ready = 0;
    try {
      for await (const ev of viaProxy.watch(dir, {
        onReady: () => {
          if (++ready === 1) for (const s of proxied) s.destroy();
          else writeFileSync(join(dir, "after"), "x");
        },
      })) {
        seen.push(ev);
        if (ev.kind === "created") break;
      }
    } finally {
      viaProxy.close();
      proxy.close();
    }
    assert.equal(ready, 2);
    assert.deepEqual(seen.map((e) => [e.kind, e.reason]), [["overflow", "reconnected"], ["created", ""]]);
    assert.equal(seen[1]!.path, join(dir, "after"));
  });

  test("a missing directory is not_found and a file is not_a_directory", async () => {
    const missing = await rejection(c.watch(join(tmp, "nope")).next());
    assert.equal(missing.code, "not_found");
    writeFileSync(join(tmp, "plain"), "x");
    const file = await rejection(c.watch(join(tmp, "plain")).next());
    assert.equal(file.code, "not_a_directory");
  });
});

describe("ports and tunnels", () => {
  test("listPorts lists a port listening in the guest", async () => {
    const { port, server } = await echoServer();
    try {
      const ports = await c.listPorts();
      const mine = ports.find((p) => p.port === port);
      assert.deepEqual(mine, { port, address: "127.0.0.1", family: "ipv4" });
      assert.ok(ports.some((p) => p.port === daemon.port), "the daemon's own port is listed");
      const sorted = ports.map((p) => p.port);
      assert.deepEqual(sorted, [...sorted].sort((a, b) => a - b));
    } finally {
      server.close();
    }
  });

  test("a tunnel carries bytes both ways and passes a half-close on", async () => {
    const { port, server } = await echoServer();
    try {
      const t = await c.openTunnel(port);
      const answer = readToEnd(t);
      t.write("hello ");
      t.end("guest"); // half-close: the guest reads its end, then answers
      assert.equal((await answer).toString(), "echo:hello guest");
      t.destroy();
    } finally {
      server.close();
    }
  });

  test("a closed guest port is port_unreachable (502) naming the port", async () => {
    const port = await closedPort();
    const e = await rejection(c.openTunnel(port));
    assert.equal(e.code, "port_unreachable");
    assert.equal(e.status, 502);
    assert.equal(e.details.port, port);
  });

  test("a tunnel without the token is unauthorized, and port 0 is refused before sending", async () => {
    const anon = new Client({ url: daemon.url });
    const e = await rejection(anon.openTunnel(1));
    assert.equal(e.code, "unauthorized");
    anon.close();
    const bad = await rejection((async () => c.openTunnel(0))());
    assert.equal(bad.code, "invalid_request");
    assert.equal(bad.status, 0);
  });

  test("forward relays each local connection through its own tunnel", async () => {
    const { port, server } = await echoServer();
    const fwd = await c.forward(port);
    try {
      const answers = await Promise.all(["one", "two", "three"].map(async (word) => {
        const s = net.connect(fwd.port, "127.0.0.1");
        s.setNoDelay(true);
        const answer = readToEnd(s);
        s.end(word);
        return (await answer).toString();
      }));
      assert.deepEqual(answers, ["echo:one", "echo:two", "echo:three"]);
    } finally {
      await fwd.close();
      server.close();
    }
  });

  test("forward to a closed guest port closes the local connection and reports why", async () => {
    const port = await closedPort();
    const errors: string[] = [];
    const fwd = await c.forward(port, { onError: (e) => errors.push(e.code) });
    try {
      const s = net.connect(fwd.port, "127.0.0.1");
      const got = await new Promise<Buffer>((resolve) => {
        const parts: Buffer[] = [];
        s.on("data", (d: Buffer) => parts.push(d));
        s.on("close", () => resolve(Buffer.concat(parts)));
        s.on("error", () => undefined);
      });
      assert.equal(got.length, 0);
      assert.deepEqual(errors, ["port_unreachable"]);
    } finally {
      await fwd.close();
    }
  });
});

describe("metrics", () => {
  test("metrics answers the Prometheus text, counting this client's requests", async () => {
    await c.health();
    const text = await c.metrics();
    assert.match(text, /^# (HELP|TYPE) agentd_/m);
    assert.match(text, /^agentd_http_requests_total\{[^}]*route="\/v1\/health"[^}]*\} [1-9]/m);
    const anon = new Client({ url: daemon.url });
    assert.equal((await rejection(anon.metrics())).code, "unauthorized");
    anon.close();
  });
});

describe("start and wait, reattach", () => {
  test("startExecAndWait answers the exit and the whole output in one request", async () => {
    const id = mintExecId("saw");
    const r = await c.startExecAndWait(id, { command: "echo out; echo err >&2; sleep 0.2; exit 3" },
      { stdoutFrom: 0, stderrFrom: 0, waitMs: 30000, untilExit: true });
    assert.equal(r.exec.state, "exited");
    assert.equal(r.exec.exitCode, 3);
    assert.equal(r.stdout?.data.toString(), "out\n");
    assert.equal(r.stderr?.data.toString(), "err\n");
  });

  test("untilExit on a poll is not ended by output alone", async () => {
    const id = mintExecId("until");
    await c.startExec(id, { command: "echo early; sleep 0.3; echo late" });
    const r = await c.pollExec(id, { stdoutFrom: 0, waitMs: 30000, untilExit: true });
    assert.equal(r.exec.state, "exited");
    assert.equal(r.stdout?.data.toString(), "early\nlate\n");
  });

  test("a fresh client with only the persisted id re-issues start-and-wait: the same exec, run once", async () => {
    const id = mintExecId("persisted");
    const request = { command: `echo run >> ${join(tmp, id)}; echo done` };
    await c.startExec(id, request); // the first harness "crashes" after this
    const fresh = new Client({ url: daemon.url, token: TOKEN });
    try {
      const r = await fresh.startExecAndWait(id, request,
        { stdoutFrom: 0, stderrFrom: 0, waitMs: 30000, untilExit: true });
      assert.equal(r.exec.id, id);
      assert.equal(r.exec.exitCode, 0);
      assert.equal(r.stdout?.data.toString(), "done\n");
      const conflict = await rejection(fresh.startExecAndWait(id, { command: "echo other" }, { waitMs: 1 }));
      assert.equal(conflict.code, "exec_id_conflict");
    } finally {
      fresh.close();
    }
    const runs = (await c.readFile(join(tmp, id))).toString();
    assert.equal(runs, "run\n", "the command ran once");
  });
});

describe("streamed files and retained output", () => {
  test("readFileTo streams into a function or a Writable, and writeFileFrom from an async iterable", async () => {
    const p = join(tmp, "streamed.bin");
    async function* parts() {
      for (let i = 0; i < 64; i++) yield Buffer.alloc(16384, i);
    }
    const st = await c.writeFileFrom(p, parts(), { mode: 0o600 });
    assert.deepEqual([st.size, st.mode], [64 * 16384, 0o600]);
    const got: Buffer[] = [];
    assert.equal(await c.readFileTo(p, (chunk) => got.push(chunk)), 64 * 16384);
    assert.ok(Buffer.concat(got).equals(Buffer.concat([...Array(64).keys()].map((i) => Buffer.alloc(16384, i)))));
    const sink = new PassThrough();
    const drained = readToEnd(sink as unknown as net.Socket);
    assert.equal(await c.readFileTo(p, sink, { range: { first: 16384, last: 16387 } }), 4);
    sink.end();
    assert.deepEqual([...(await drained)], [1, 1, 1, 1]);
    const bad = await rejection(c.writeFileFrom(p, "text" as unknown as AsyncIterable<Uint8Array>));
    assert.equal(bad.details.field, "source");
  });

  test("readOutput reads the retained bytes from an offset, and names lost ones as a gap", async () => {
    const id = mintExecId("out");
    await c.startExecAndWait(id, { command: "printf 0123456789; printf err >&2" }, { waitMs: 30000, untilExit: true });
    assert.deepEqual(await c.readOutput(id, "stdout", 4), { start: 4, next: 10, data: Buffer.from("456789") });
    assert.equal((await c.readOutput(id, "stderr")).data.toString(), "err");
    const d = await Daemon.start("--retention-stream-bytes", "4096");
    const small = await d.client();
    try {
      const big = mintExecId("big");
      await small.startExecAndWait(big, { command: "head -c 20000 /dev/zero" }, { waitMs: 30000, untilExit: true });
      const r = await small.readOutput(big);
      assert.ok(r.start > 0 && r.gap?.from === 0 && r.gap.to === r.start, JSON.stringify({ ...r, data: r.data.length }));
      assert.equal(r.next, 20000);
      assert.equal(r.data.length, 20000 - r.start);
      const e = await rejection(small.readOutput(big, "stdout", 0, { maxBytes: 100 }));
      assert.equal(e.code, "protocol_error");
    } finally {
      small.close();
      await d.stop();
    }
  });

  test("daemon errors arrive as their classes", async () => {
    const e = await rejection(c.stat(join(tmp, "absent")));
    assert.ok(e instanceof NotFound);
    assert.equal(e.name, "NotFound");
    assert.ok(await rejection(c.ackExec("never-started")) instanceof ExecNotFound);
  });
});
