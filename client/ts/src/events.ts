// Server-sent events of GET /v1/execs/{id}/events applied to a reader's
// cursors, so each output byte is delivered exactly once whatever a
// resumed stream repeats.
import { protocolError } from "./errors.js";
import type { SseEvent } from "./sse.js";
import type { Cursors, StreamEvent } from "./types.js";
import { execInfoFromWire } from "./wire.js";

export function applyEvent(ev: SseEvent, cur: Cursors): StreamEvent | undefined {
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(ev.data) as Record<string, unknown>;
  } catch {
    throw protocolError("bad event data");
  }
  const pos = /^(\d+):(\d+)$/.exec(ev.id ?? "");
  const adopt = () => {
    if (pos) {
      cur.stdout = Math.max(cur.stdout, Number(pos[1]));
      cur.stderr = Math.max(cur.stderr, Number(pos[2]));
    }
  };
  if (ev.event === "stdout" || ev.event === "stderr") {
    const offset = doc.offset;
    if (typeof offset !== "number" || typeof doc.data_b64 !== "string") throw protocolError("bad output event");
    const data = Buffer.from(doc.data_b64, "base64");
    const next = cur[ev.event];
    let out: StreamEvent | undefined;
    // Only bytes past the cursor: exactly once, whatever the daemon repeats.
    if (offset <= next && next < offset + data.length) {
      const fresh = data.subarray(next - offset);
      cur[ev.event] = offset + data.length;
      adopt();
      out = { kind: ev.event, offset: next, data: fresh, cursors: { ...cur } } as StreamEvent;
    } else {
      adopt();
    }
    return out;
  }
  if (ev.event === "gap") {
    const { stream, from, to } = doc as { stream: "stdout" | "stderr"; from: number; to: number };
    if ((stream !== "stdout" && stream !== "stderr") || typeof from !== "number" || typeof to !== "number") {
      throw protocolError("bad gap event");
    }
    const next = cur[stream];
    if (to > next) {
      cur[stream] = to;
      adopt();
      return { kind: "gap", stream, from: Math.max(next, from), to, cursors: { ...cur } };
    }
    adopt();
    return undefined;
  }
  if (ev.event === "exit") {
    adopt();
    return { kind: "exit", exec: execInfoFromWire(doc), cursors: { ...cur } };
  }
  return undefined; // an event kind this client does not know
}
