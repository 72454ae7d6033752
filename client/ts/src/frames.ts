// Binary frames of GET /v1/execs/{id}/events (docs/PROTOCOL.md, "Frames"):
// the SSE route's events with output as raw bytes, so reading a stream is
// not bound by base64 decoding. A frame is a 16-byte big-endian header
// (kind, stream, two zero bytes, u32 payload length, u64 offset) and its
// payload.
import { protocolError } from "./errors.js";

export const FRAMES_MEDIA_TYPE = "application/vnd.agentd.frames";
export const FRAME_OUTPUT = 1;
export const FRAME_GAP = 2;
export const FRAME_EXIT = 3;
export const FRAME_KEEPALIVE = 4;
/** An output frame's payload at most (the SSE route's event bound). */
export const MAX_FRAME_OUTPUT = 128 << 10;
/** Any frame's payload at most (the exit frame's exec object). */
export const MAX_FRAME_PAYLOAD = 1 << 20;
const HEADER = 16;

export interface Frame {
  kind: number;
  stream: number;
  offset: number;
  payload: Buffer;
}

function check(kind: number, length: number): void {
  const limit = kind === FRAME_OUTPUT ? MAX_FRAME_OUTPUT : MAX_FRAME_PAYLOAD;
  if (length > limit) {
    throw protocolError(`event frame of ${length} bytes is over the limit of ${limit}`, { length, limit });
  }
  if (kind === FRAME_GAP && length !== 8) throw protocolError(`bad gap frame (${length} bytes)`);
}

/** Reads a u64 as a number; offsets past 2^53 are refused, not rounded. */
export function readOffset(b: Buffer, at: number): number {
  const v = b.readUInt32BE(at) * 0x1_0000_0000 + b.readUInt32BE(at + 4);
  if (!Number.isSafeInteger(v)) throw protocolError("frame offset past 2^53");
  return v;
}

/**
 * Fed with bytes in any split, hands out whole frames in order. A length
 * over the documented bounds is refused before any of its payload is held.
 */
export class FrameDecoder {
  /** Pieces of an unfinished frame, and their length. */
  private pending: Buffer[] = [];
  private pendingLength = 0;
  /** The unfinished frame's whole length once its header is in (0 before). */
  private need = 0;

  feed(chunk: Buffer): Frame[] {
    let data = chunk;
    if (this.pendingLength) {
      // The pieces are joined once they hold the whole frame; its header is
      // read once, so a peer trickling bytes costs no rescans.
      this.pending.push(chunk);
      this.pendingLength += chunk.length;
      if (!this.need) {
        if (this.pendingLength < HEADER) return [];
        const head = Buffer.concat(this.pending, HEADER);
        const length = head.readUInt32BE(4);
        check(head[0]!, length);
        this.need = HEADER + length;
      }
      if (this.pendingLength < this.need) return [];
      data = Buffer.concat(this.pending, this.pendingLength);
      this.pending = [];
      this.pendingLength = 0;
      this.need = 0;
    }
    const out: Frame[] = [];
    let pos = 0;
    while (data.length - pos >= HEADER) {
      const kind = data[pos]!;
      const length = data.readUInt32BE(pos + 4);
      check(kind, length);
      const end = pos + HEADER + length;
      if (end > data.length) break;
      out.push({ kind, stream: data[pos + 1]!, offset: readOffset(data, pos + 8), payload: data.subarray(pos + HEADER, end) });
      pos = end;
    }
    if (pos < data.length) {
      this.pending.push(data.subarray(pos));
      this.pendingLength = data.length - pos;
    }
    return out;
  }
}
