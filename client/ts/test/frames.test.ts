// The output stream over the event stream's binary frames (docs/PROTOCOL.md,
// "Frames"): the client asks for frames, yields exactly the bytes the raw
// route holds, falls back to SSE when an older daemon answers
// text/event-stream, and refuses a frame longer than the documented bounds
// before reading it.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";

import { AgentdError, Client, mintExecId, type StreamEvent } from "../src/index.js";
import { FrameDecoder } from "../src/frames.js";
import { Daemon } from "./helpers.js";

const FRAMES = "application/vnd.agentd.frames";
// Interleaved stdout and stderr, with runs longer than one frame.
const MIXED = "i=0; while [ $i -lt 30 ]; do head -c 2500 /dev/urandom; head -c 900 /dev/urandom >&2; " +
  "i=$((i+1)); done; head -c 400000 /dev/urandom; head -c 150000 /dev/urandom >&2";

function frame(kind: number, stream: number, offset: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(16);
  head[0] = kind;
  head[1] = stream;
  head.writeUInt32BE(payload.length, 4);
  head.writeBigUInt64BE(BigInt(offset), 8);
  return Buffer.concat([head, payload]);
}

async function collect(events: AsyncIterable<StreamEvent>) {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const all: StreamEvent[] = [];
  for await (const ev of events) {
    all.push(ev);
    if (ev.kind === "stdout") out.push(ev.data);
    else if (ev.kind === "stderr") err.push(ev.data);
  }
  return { out: Buffer.concat(out), err: Buffer.concat(err), all };
}

/** [Accept sent, Content-Type answered] of every request `c` opens. */
function recordOpens(c: Client): [string, string][] {
  const seen: [string, string][] = [];
  const t = (c as unknown as { t: { open: (req: { headers?: Record<string, string> }) => Promise<http.IncomingMessage> } }).t;
  const inner = t.open.bind(t);
  t.open = async (req) => {
    const res = await inner(req);
    seen.push([req.headers?.Accept ?? "", String(res.headers["content-type"])]);
    return res;
  };
  return seen;
}

describe("frames against the daemon", () => {
  let daemon: Daemon;
  let c: Client;
  before(async () => {
    daemon = await Daemon.start();
    c = await daemon.client();
  });
  after(async () => {
    c.close();
    await daemon.stop();
  });

  test("stream asks for frames and yields the raw route's bytes", async () => {
    const id = mintExecId("frames");
    await c.startExec(id, { argv: ["sh", "-c", MIXED] });
    const seen = recordOpens(c);
    const got = await collect(c.stream(id));
    assert.deepEqual(seen, [[`${FRAMES}, text/event-stream`, FRAMES]]);
    assert.deepEqual([got.out.length, got.err.length], [30 * 2500 + 400000, 30 * 900 + 150000]);
    assert.ok(got.out.equals((await c.readOutput(id, "stdout")).data));
    assert.ok(got.err.equals((await c.readOutput(id, "stderr")).data));
    const last = got.all[got.all.length - 1]!;
    assert.equal(last.kind, "exit");
    assert.deepEqual(last.cursors, { stdout: got.out.length, stderr: got.err.length });
    const rest = await collect(c.stream(id, { stdout: 150001, stderr: 7 }));
    assert.ok(rest.out.equals(got.out.subarray(150001)));
    assert.ok(rest.err.equals(got.err.subarray(7)));
  });
});

describe("frames from a fake daemon", () => {
  let server: http.Server;
  let type = FRAMES;
  let body: Buffer = Buffer.alloc(0);
  const accepts: string[] = [];
  let fake: Client;
  const exitDoc = Buffer.from(JSON.stringify({ id: "fake-1", state: "exited", exit_code: 0, stdout_bytes: 5 }));

  before(async () => {
    server = http.createServer((req, res) => {
      if (req.url === "/v1/health") { // the client's version check on first use
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ status: "ok", version: "0.1.0", protocol: 1 }));
        return;
      }
      accepts.push(String(req.headers.accept));
      res.writeHead(200, { "Content-Type": type, "Content-Length": body.length, Connection: "close" });
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    fake = new Client({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: "t",
      maxStreamReconnects: 0, backoffInitialMs: 1 });
  });
  after(() => {
    fake.close();
    server.close();
  });

  test("an older daemon answering SSE is read as SSE", async () => {
    type = "text/event-stream";
    body = Buffer.from('event: stdout\ndata: {"offset":0,"data_b64":"aGVsbG8="}\nid: 5:0\n\n' +
      `event: exit\ndata: ${exitDoc.toString()}\nid: 5:0\n\n`);
    accepts.length = 0;
    const got = await collect(fake.stream("fake-1"));
    assert.deepEqual(accepts, [`${FRAMES}, text/event-stream`]);
    assert.equal(got.out.toString(), "hello");
    assert.deepEqual(got.all.map((e) => e.kind), ["stdout", "exit"]);
  });

  test("frames give output, gap and exit; unknown kinds and keepalives are skipped", async () => {
    type = FRAMES;
    const to = Buffer.alloc(8);
    to.writeBigUInt64BE(3n);
    body = Buffer.concat([frame(2, 1, 0, to), frame(4, 0, 0, Buffer.alloc(0)), frame(1, 1, 3, Buffer.from("lo")),
      frame(1, 2, 0, Buffer.from("E")), frame(9, 0, 0, Buffer.from("future")), frame(3, 0, 0, exitDoc)]);
    const got = await collect(fake.stream("fake-1"));
    assert.deepEqual(got.all.map((e) => e.kind === "gap" ? [e.kind, e.stream, e.from, e.to]
      : e.kind === "exit" ? [e.kind, e.exec.exitCode, e.cursors] : [e.kind, e.offset, e.data.toString()]),
    [["gap", "stdout", 0, 3], ["stdout", 3, "lo"], ["stderr", 0, "E"], ["exit", 0, { stdout: 5, stderr: 1 }]]);
  });

  test("a frame over the documented bound is a protocol error", async () => {
    type = FRAMES;
    for (const [kind, length] of [[1, 131073], [3, (1 << 20) + 1], [1, 0xffffffff], [2, 9]] as const) {
      // The header alone: refused before waiting for (or holding) the payload.
      const head = frame(kind, 1, 0, Buffer.alloc(0));
      head.writeUInt32BE(length, 4);
      body = head;
      await assert.rejects(collect(fake.stream("fake-1")), (e: unknown) =>
        e instanceof AgentdError && e.code === "protocol_error", `kind ${kind} length ${length}`);
    }
  });
});

test("frames split at every byte decode alike", () => {
  const wire = Buffer.concat([frame(1, 1, 0, Buffer.alloc(128000, 5)), frame(1, 2, 0, Buffer.from("x")),
    frame(4, 0, 0, Buffer.alloc(0)), frame(3, 0, 0, Buffer.from("{}"))]);
  const want = new FrameDecoder().feed(wire);
  assert.deepEqual(want.map((f) => f.kind), [1, 1, 4, 3]);
  for (const step of [1, 5, 16, 17, 4096, 128016]) {
    const dec = new FrameDecoder();
    const got = [];
    for (let i = 0; i < wire.length; i += step) got.push(...dec.feed(wire.subarray(i, i + step)));
    assert.deepEqual(got, want, `step ${step}`);
  }
});
