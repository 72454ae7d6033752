// Server-Sent Events decoding: the subset agentd sends (event, data, id,
// comment lines), fed with bytes in any split.
//
// An output event's data line is 170 KB of base64 that arrives over several
// reads: its pieces are kept as they came and joined once, and its text is
// decoded only when asked for (`data`); the exec stream reads the bytes of
// its one data line (`dataBytes`) instead.
import { protocolError } from "./errors.js";

export class SseEvent {
  constructor(readonly event: string, private readonly lines: Buffer[], readonly id: string | null) {}

  /** The data lines as text, joined by "\n". */
  get data(): string {
    return this.lines.map((l) => l.toString("utf8")).join("\n");
  }

  /** The bytes of the data when it is one line, else undefined. */
  get dataBytes(): Buffer | undefined {
    return this.lines.length === 1 ? this.lines[0] : undefined;
  }
}

const MAX_LINE = 4 << 20;
const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;
const DATA = Buffer.from("data");

export class SseDecoder {
  /** The pieces of an unfinished line (no LF in any of them), and their length. */
  private pending: Buffer[] = [];
  private pendingLength = 0;
  private event = "";
  private data: Buffer[] = [];
  private id: string | null = null;
  /** Bytes of the event being gathered: bounded like a line, however many lines carry it. */
  private size = 0;

  feed(chunk: Buffer): SseEvent[] {
    const out: SseEvent[] = [];
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(LF, start);
      if (nl < 0) {
        if (start < chunk.length) {
          this.pending.push(chunk.subarray(start));
          this.pendingLength += chunk.length - start;
        }
        if (this.pendingLength > MAX_LINE) throw protocolError("event stream line too long");
        return out;
      }
      let line = chunk.subarray(start, nl);
      start = nl + 1;
      if (this.pending.length) {
        if (this.pendingLength + line.length > MAX_LINE) throw protocolError("event stream line too long");
        line = Buffer.concat([...this.pending, line]);
        this.pending = [];
        this.pendingLength = 0;
      }
      if (line.length && line[line.length - 1] === CR) line = line.subarray(0, -1);
      const ev = this.line(line);
      if (ev) out.push(ev);
    }
  }

  private line(line: Buffer): SseEvent | undefined {
    if (line.length === 0) {
      const ev = this.data.length || this.event ? new SseEvent(this.event || "message", this.data, this.id) : undefined;
      this.event = "";
      this.data = [];
      this.id = null;
      this.size = 0;
      return ev;
    }
    if (line[0] === COLON) return undefined; // keepalive
    this.size += line.length;
    if (this.size > MAX_LINE) throw protocolError("event stream event too long", { limit: MAX_LINE });
    const colon = line.indexOf(COLON);
    const nameEnd = colon < 0 ? line.length : colon;
    let valueStart = colon < 0 ? line.length : colon + 1;
    if (valueStart < line.length && line[valueStart] === SPACE) valueStart++;
    if (nameEnd === DATA.length && line.compare(DATA, 0, DATA.length, 0, nameEnd) === 0) {
      this.data.push(line.subarray(valueStart));
      return undefined;
    }
    const name = line.toString("utf8", 0, nameEnd);
    const value = line.toString("utf8", valueStart);
    if (name === "event") this.event = value;
    else if (name === "id") this.id = value;
    return undefined;
  }
}
