// Server-Sent Events decoding: the subset agentd sends (event, data, id,
// comment lines), fed with bytes in any split.
import { protocolError } from "./errors.js";

export interface SseEvent {
  event: string;
  data: string;
  id: string | null;
}

const MAX_LINE = 4 << 20;

export class SseDecoder {
  private buf: Buffer = Buffer.alloc(0);
  private event = "";
  private data: string[] = [];
  private id: string | null = null;
  /** Bytes of the event being gathered: bounded like a line, however many lines carry it. */
  private size = 0;

  feed(chunk: Buffer): SseEvent[] {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    const out: SseEvent[] = [];
    for (;;) {
      const nl = this.buf.indexOf(0x0a);
      if (nl < 0) {
        if (this.buf.length > MAX_LINE) throw protocolError("event stream line too long");
        return out;
      }
      let line = this.buf.subarray(0, nl).toString("utf8");
      this.buf = this.buf.subarray(nl + 1);
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line === "") {
        if (this.data.length || this.event) {
          out.push({ event: this.event || "message", data: this.data.join("\n"), id: this.id });
        }
        this.event = "";
        this.data = [];
        this.id = null;
        this.size = 0;
        continue;
      }
      if (line.startsWith(":")) continue; // keepalive
      this.size += line.length;
      if (this.size > MAX_LINE) throw protocolError("event stream event too long", { limit: MAX_LINE });
      const colon = line.indexOf(":");
      const name = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (name === "event") this.event = value;
      else if (name === "data") this.data.push(value);
      else if (name === "id") this.id = value;
    }
  }
}
