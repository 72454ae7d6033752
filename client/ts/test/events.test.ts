// The event stream's decoder, fed in every split: the daemon's compact
// output events (sliced, not parsed) and any other JSON spelling decode
// alike; a broken one is protocol_error, never wrong bytes. (The cut
// connections of exec.test.ts cover the same decoder against the daemon.)
import assert from "node:assert/strict";
import { test } from "node:test";

import { AgentdError } from "../src/index.js";
import { applyEvent } from "../src/events.js";
import { SseDecoder } from "../src/sse.js";
import type { Cursors, StreamEvent } from "../src/types.js";

function decode(wire: Buffer, step: number): { events: StreamEvent[]; cur: Cursors } {
  const dec = new SseDecoder();
  const cur: Cursors = { stdout: 0, stderr: 0 };
  const events: StreamEvent[] = [];
  for (let i = 0; i < wire.length; i += step) {
    for (const ev of dec.feed(wire.subarray(i, i + step))) {
      const out = applyEvent(ev, cur);
      if (out) events.push(out);
    }
  }
  return { events, cur };
}

test("compact and spaced output events give the same bytes in every split", () => {
  const wire = Buffer.from(
    'event: stdout\ndata: {"offset":0,"data_b64":"aGVsbG8="}\nid: 5:0\n\n' +
    ": keepalive\n\n" +
    'event: stderr\r\ndata: { "data_b64": "b29w", "offset": 0 }\r\nid: 5:3\r\n\r\n');
  for (const step of [1, 7, wire.length]) {
    const { events, cur } = decode(wire, step);
    assert.deepEqual(events.map((e) => e.kind === "stdout" || e.kind === "stderr" ? [e.kind, e.offset, e.data.toString()] : e.kind),
      [["stdout", 0, "hello"], ["stderr", 0, "oop"]], `step ${step}`);
    assert.deepEqual(cur, { stdout: 5, stderr: 3 });
  }
});

test("a large output event split over many reads arrives whole", () => {
  const data = Buffer.alloc(128 << 10, 7);
  const wire = Buffer.from(`event: stdout\ndata: {"offset":0,"data_b64":"${data.toString("base64")}"}\nid: ${data.length}:0\n\n`);
  const { events } = decode(wire, 65536);
  assert.equal(events.length, 1);
  assert.ok(events[0]!.kind === "stdout" && events[0]!.data.equals(data));
});

test("a broken output event is protocol_error", () => {
  for (const data of ['{"offset":-1,"data_b64":""}', '{"offset":0,"data_b64":"aGk="', "[1]", '{"offset":"0","data_b64":""}']) {
    assert.throws(() => decode(Buffer.from(`event: stdout\ndata: ${data}\nid: 1:0\n\n`), 3),
      (e: unknown) => e instanceof AgentdError && e.code === "protocol_error", data);
  }
});
