// Server-sent events of GET /v1/execs/{id}/events applied to a reader's
// cursors, so each output byte is delivered exactly once whatever a
// resumed stream repeats.
import { protocolError } from "./errors.js";
import { FRAME_EXIT, FRAME_GAP, FRAME_OUTPUT, type Frame, readOffset } from "./frames.js";
import type { SseEvent } from "./sse.js";
import type { Cursors, StreamEvent } from "./types.js";
import { execInfoFromWire } from "./wire.js";

const OUTPUT_HEAD = Buffer.from('{"offset":');
const DATA_HEAD = Buffer.from(',"data_b64":"');
const QUOTE = 0x22;

/**
 * {offset, data} of an output event written the daemon's way,
 * {"offset":N,"data_b64":"..."} (base64 needs no JSON escapes), sliced
 * rather than parsed: parsing 170 KB of JSON and decoding it as UTF-8 cost
 * more than the base64 decode. undefined for any other spelling.
 */
function compactOutput(raw: Buffer | undefined): { offset: number; data: Buffer } | undefined {
  if (!raw || raw.length < OUTPUT_HEAD.length + DATA_HEAD.length + 3) return undefined;
  if (raw.compare(OUTPUT_HEAD, 0, OUTPUT_HEAD.length, 0, OUTPUT_HEAD.length) !== 0) return undefined;
  let i = OUTPUT_HEAD.length;
  while (i < raw.length && raw[i]! >= 0x30 && raw[i]! <= 0x39 && i - OUTPUT_HEAD.length < 16) i++;
  if (i === OUTPUT_HEAD.length || raw.compare(DATA_HEAD, 0, DATA_HEAD.length, i, i + DATA_HEAD.length) !== 0) {
    return undefined;
  }
  const b64 = i + DATA_HEAD.length;
  const end = raw.length - 2;
  if (raw[end] !== QUOTE || raw[end + 1] !== 0x7d || raw.indexOf(QUOTE, b64) !== end) return undefined;
  const offset = Number(raw.toString("latin1", OUTPUT_HEAD.length, i));
  if (!Number.isSafeInteger(offset)) return undefined;
  return { offset, data: Buffer.from(raw.toString("latin1", b64, end), "base64") };
}

function parseData(ev: SseEvent): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = JSON.parse(ev.data);
  } catch {
    throw protocolError("bad event data");
  }
  if (typeof doc !== "object" || doc === null) throw protocolError("bad event data");
  return doc as Record<string, unknown>;
}

export function applyEvent(ev: SseEvent, cur: Cursors): StreamEvent | undefined {
  const pos = /^(\d+):(\d+)$/.exec(ev.id ?? "");
  const adopt = () => {
    if (pos) {
      cur.stdout = Math.max(cur.stdout, Number(pos[1]));
      cur.stderr = Math.max(cur.stderr, Number(pos[2]));
    }
  };
  if (ev.event === "stdout" || ev.event === "stderr") {
    let output = compactOutput(ev.dataBytes);
    if (!output) {
      const doc = parseData(ev);
      if (typeof doc.offset !== "number" || doc.offset < 0 || typeof doc.data_b64 !== "string") {
        throw protocolError("bad output event");
      }
      output = { offset: doc.offset, data: Buffer.from(doc.data_b64, "base64") };
    }
    return applyOutput(ev.event, output.offset, output.data, cur, adopt);
  }
  const doc = parseData(ev);
  if (ev.event === "gap") {
    const { stream, from, to } = doc as { stream: "stdout" | "stderr"; from: number; to: number };
    if ((stream !== "stdout" && stream !== "stderr") || typeof from !== "number" || typeof to !== "number") {
      throw protocolError("bad gap event");
    }
    return applyGap(stream, from, to, cur, adopt);
  }
  if (ev.event === "exit") {
    adopt();
    return { kind: "exit", exec: execInfoFromWire(doc), cursors: { ...cur } };
  }
  return undefined; // an event kind this client does not know
}

const noAdopt = () => {};

function applyOutput(kind: "stdout" | "stderr", offset: number, data: Buffer, cur: Cursors,
                     adopt: () => void): StreamEvent | undefined {
  const next = cur[kind];
  // Only bytes past the cursor: exactly once, whatever the daemon repeats.
  if (offset <= next && next < offset + data.length) {
    const fresh = next === offset ? data : data.subarray(next - offset);
    cur[kind] = offset + data.length;
    adopt();
    return { kind, offset: next, data: fresh, cursors: { ...cur } } as StreamEvent;
  }
  adopt();
  return undefined;
}

function applyGap(stream: "stdout" | "stderr", from: number, to: number, cur: Cursors,
                  adopt: () => void): StreamEvent | undefined {
  const next = cur[stream];
  if (to > next) {
    cur[stream] = to;
    adopt();
    return { kind: "gap", stream, from: Math.max(next, from), to, cursors: { ...cur } };
  }
  adopt();
  return undefined;
}

/**
 * One binary frame (docs/PROTOCOL.md, "Frames") applied like applyEvent;
 * undefined for a keepalive, a kind this client does not know, or bytes
 * already delivered. `delivered` tells a keepalive from the rest.
 */
export function applyFrame(f: Frame, cur: Cursors): { event?: StreamEvent; delivered: boolean } {
  if (f.kind === FRAME_OUTPUT || f.kind === FRAME_GAP) {
    const stream = f.stream === 1 ? "stdout" : f.stream === 2 ? "stderr" : undefined;
    if (!stream) throw protocolError(`bad frame stream ${f.stream}`);
    const event = f.kind === FRAME_OUTPUT
      ? applyOutput(stream, f.offset, f.payload, cur, noAdopt)
      : applyGap(stream, f.offset, readOffset(f.payload, 0), cur, noAdopt);
    return { event, delivered: true };
  }
  if (f.kind === FRAME_EXIT) {
    let doc: unknown;
    try {
      doc = JSON.parse(f.payload.toString("utf8"));
    } catch {
      throw protocolError("bad exit frame");
    }
    if (typeof doc !== "object" || doc === null) throw protocolError("bad exit frame");
    return { event: { kind: "exit", exec: execInfoFromWire(doc as Record<string, unknown>), cursors: { ...cur } }, delivered: true };
  }
  return { delivered: false };
}
