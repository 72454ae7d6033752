// A small tar writer and reader for tree transfers (docs/PROTOCOL.md,
// "Trees"), written here rather than taken from npm: the maintained tar
// packages on npm (tar, tar-stream, tar-fs) all bring runtime dependencies,
// and this package has none. Names, link targets and pax values are raw
// bytes (Buffers) throughout, so names that are not UTF-8 survive.
//
// Writer: POSIX pax (ustar headers plus an extended header for long or
// non-ASCII names and targets, large sizes, and nanosecond mtimes);
// regular files, directories, symlinks (never followed), hard links among
// the archived files; devices, FIFOs and sockets are skipped with a note.
//
// Reader: ustar, pax (path, linkpath, size, mtime; hdrcharset ignored:
// values are bytes), GNU long names (L, K) and base-256 numbers; v7.
import { createReadStream, promises as fsp } from "node:fs";
import type { Stats, BigIntStats } from "node:fs";

import { AgentdError, makeError } from "./errors.js";

export const BLOCK = 512;

export interface TarEntryHeader {
  name: Buffer;
  type: "file" | "dir" | "symlink" | "hardlink" | "other";
  typeflag: string;
  mode: number;
  size: number;
  /** Seconds and nanoseconds. */
  mtimeSec: number;
  mtimeNsec: number;
  linkname: Buffer;
}

// -- writing -------------------------------------------------------------------

function octal(value: number, width: number): Buffer {
  const text = value.toString(8).padStart(width - 1, "0");
  if (text.length > width - 1) throw new RangeError("value too large for a ustar field");
  return Buffer.from(text + "\0", "latin1");
}

function paxRecord(key: string, value: Buffer): Buffer {
  const rest = Buffer.concat([Buffer.from(` ${key}=`, "latin1"), value, Buffer.from("\n")]);
  let len = rest.length + 1;
  while (String(len).length + rest.length !== len) len = String(len).length + rest.length;
  return Buffer.concat([Buffer.from(String(len), "latin1"), rest]);
}

function padTo512(n: number): number {
  return (BLOCK - (n % BLOCK)) % BLOCK;
}

function rawHeader(name: Buffer, typeflag: string, mode: number, size: number, mtime: number,
                   linkname: Buffer, uid = 0, gid = 0): Buffer {
  const h = Buffer.alloc(BLOCK);
  name.copy(h, 0, 0, Math.min(name.length, 100));
  octal(mode & 0o7777, 8).copy(h, 100);
  octal(uid, 8).copy(h, 108);
  octal(gid, 8).copy(h, 116);
  octal(size, 12).copy(h, 124);
  octal(mtime, 12).copy(h, 136);
  h.write(typeflag, 156, "latin1");
  linkname.copy(h, 157, 0, Math.min(linkname.length, 100));
  h.write("ustar\0" + "00", 257, "latin1");
  h.fill(0x20, 148, 156);
  let sum = 0;
  for (const b of h) sum += b;
  Buffer.from(sum.toString(8).padStart(6, "0") + "\0 ", "latin1").copy(h, 148);
  return h;
}

/** The header blocks (a pax extended header where needed, then ustar) of one entry. */
export function encodeHeader(e: {
  name: Buffer; typeflag: string; mode: number; size: number; mtimeSec: number;
  mtimeNsec?: number; linkname?: Buffer; uid?: number; gid?: number;
}): Buffer {
  const linkname = e.linkname ?? Buffer.alloc(0);
  const records: Buffer[] = [];
  const ascii = (b: Buffer) => b.every((c) => c > 0 && c < 0x80);
  if (e.name.length > 100 || !ascii(e.name)) records.push(paxRecord("path", e.name));
  if (linkname.length > 100 || !ascii(linkname) && linkname.length) {
    records.push(paxRecord("linkpath", linkname));
  }
  if (e.size > 0o77777777777) records.push(paxRecord("size", Buffer.from(String(e.size))));
  const uid = e.uid ?? 0;
  const gid = e.gid ?? 0;
  if (uid > 0o7777777) records.push(paxRecord("uid", Buffer.from(String(uid))));
  if (gid > 0o7777777) records.push(paxRecord("gid", Buffer.from(String(gid))));
  if (e.mtimeNsec) {
    records.push(paxRecord("mtime", Buffer.from(`${e.mtimeSec}.${String(e.mtimeNsec).padStart(9, "0")}`)));
  }
  const main = rawHeader(e.name, e.typeflag, e.mode, e.size > 0o77777777777 ? 0 : e.size,
    Math.max(0, e.mtimeSec), linkname, uid > 0o7777777 ? 0 : uid, gid > 0o7777777 ? 0 : gid);
  if (!records.length) return main;
  const isUtf8 = (b: Buffer) => {
    try {
      new TextDecoder("utf-8", { fatal: true }).decode(b);
      return true;
    } catch {
      return false;
    }
  };
  if (!isUtf8(e.name) || !isUtf8(linkname)) records.unshift(paxRecord("hdrcharset", Buffer.from("BINARY")));
  const data = Buffer.concat(records);
  const paxName = Buffer.from("PaxHeaders/" + e.name.subarray(-80).toString("latin1").replace(/[^\x20-\x7e]/g, "_"), "latin1");
  return Buffer.concat([
    rawHeader(paxName, "x", 0o644, data.length, Math.max(0, e.mtimeSec), Buffer.alloc(0)),
    data, Buffer.alloc(padTo512(data.length)), main,
  ]);
}

function join(dir: Buffer, name: Buffer): Buffer {
  return dir.length ? Buffer.concat([dir, Buffer.from("/"), name]) : name;
}

/**
 * The pax tar of `root`'s contents (names relative to it, each directory
 * before its contents, entries in byte order of their names), in blocks.
 * `stats` counts entries and file bytes as they are produced.
 */
export async function* writeTree(root: string, stats: { entries: number; bytes: number }):
    AsyncGenerator<Buffer> {
  const rootBuf = Buffer.from(root);
  const links = new Map<string, Buffer>(); // dev:ino -> first archived name
  async function* walk(rel: Buffer): AsyncGenerator<Buffer> {
    const dirPath = rel.length ? join(rootBuf, rel) : rootBuf;
    const names = (await fsp.readdir(dirPath, { encoding: "buffer" })).sort(Buffer.compare);
    for (const name of names) {
      const relName = join(rel, name);
      const full = join(rootBuf, relName);
      const st = await fsp.lstat(full, { bigint: true });
      const mtimeSec = Number(st.mtimeNs / 1000000000n);
      const mtimeNsec = Number(st.mtimeNs % 1000000000n);
      const base = { mode: Number(st.mode) & 0o7777, mtimeSec, mtimeNsec,
        uid: Number(st.uid), gid: Number(st.gid) };
      if (st.isDirectory()) {
        stats.entries++;
        yield encodeHeader({ ...base, name: Buffer.concat([relName, Buffer.from("/")]), typeflag: "5", size: 0 });
        yield* walk(relName);
      } else if (st.isSymbolicLink()) {
        stats.entries++;
        const target = await fsp.readlink(full, { encoding: "buffer" });
        yield encodeHeader({ ...base, name: relName, typeflag: "2", size: 0, linkname: target });
      } else if (st.isFile()) {
        const key = `${st.dev}:${st.ino}`;
        const first = st.nlink > 1n ? links.get(key) : undefined;
        stats.entries++;
        if (first) {
          yield encodeHeader({ ...base, name: relName, typeflag: "1", size: 0, linkname: first });
          continue;
        }
        if (st.nlink > 1n) links.set(key, relName);
        yield* fileEntry(full, relName, base, st, stats);
      }
      // Devices, FIFOs and sockets are skipped: the daemon would refuse them.
    }
  }
  yield* walk(Buffer.alloc(0));
  yield Buffer.alloc(BLOCK * 2);
}

async function* fileEntry(full: Buffer, relName: Buffer,
                          base: { mode: number; mtimeSec: number; mtimeNsec: number; uid: number; gid: number },
                          st: BigIntStats | Stats, stats: { bytes: number }): AsyncGenerator<Buffer> {
  const size = Number(st.size);
  yield encodeHeader({ ...base, name: relName, typeflag: "0", size });
  let sent = 0;
  if (size > 0) {
    for await (const chunk of createReadStream(full, { highWaterMark: 256 * 1024, end: size - 1 })) {
      const buf = chunk as Buffer;
      sent += buf.length;
      stats.bytes += buf.length;
      yield buf;
    }
  }
  if (sent !== size) {
    throw makeError("io_error", `${full.toString()} changed size while being archived`, 0,
      { path: full.toString() });
  }
  if (padTo512(size)) yield Buffer.alloc(padTo512(size));
}

// -- reading -------------------------------------------------------------------

/** Pulls exact byte counts from an async iterator of chunks. */
export class ChunkReader {
  private buf: Buffer = Buffer.alloc(0);
  private done = false;
  constructor(private readonly source: AsyncIterator<Buffer>) {}

  private async fill(n: number): Promise<void> {
    while (this.buf.length < n && !this.done) {
      const r = await this.source.next();
      if (r.done) this.done = true;
      else this.buf = this.buf.length ? Buffer.concat([this.buf, r.value]) : r.value;
    }
  }

  /** Exactly n bytes, or fewer only at the end of the input. */
  async read(n: number): Promise<Buffer> {
    await this.fill(n);
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(out.length);
    return out;
  }

  /** Up to n bytes that are available now (at least 1 unless at the end). */
  async readSome(n: number): Promise<Buffer> {
    if (!this.buf.length) await this.fill(1);
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(out.length);
    return out;
  }
}

function invalid(reason: string): AgentdError {
  return makeError("invalid_archive", `malformed archive: ${reason}`, 0, { reason });
}

function field(h: Buffer, off: number, len: number): Buffer {
  const f = h.subarray(off, off + len);
  const nul = f.indexOf(0);
  return nul < 0 ? f : f.subarray(0, nul);
}

function number(h: Buffer, off: number, len: number): number {
  if (h[off]! & 0x80) { // GNU base-256
    let v = 0;
    for (let i = off + 1; i < off + len; i++) v = v * 256 + h[i]!;
    return v;
  }
  const text = field(h, off, len).toString("latin1").trim();
  if (!text) return 0;
  if (!/^[0-7]+$/.test(text)) throw invalid(`bad number field "${text}"`);
  return parseInt(text, 8);
}

function parsePax(data: Buffer): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  let pos = 0;
  while (pos < data.length) {
    const sp = data.indexOf(0x20, pos);
    if (sp < 0) throw invalid("bad pax record");
    const len = Number(data.subarray(pos, sp).toString("latin1"));
    if (!Number.isInteger(len) || len <= 0 || pos + len > data.length) throw invalid("bad pax record length");
    const rec = data.subarray(sp + 1, pos + len - 1);
    const eq = rec.indexOf(0x3d);
    if (eq < 0) throw invalid("bad pax record");
    out.set(rec.subarray(0, eq).toString("latin1"), rec.subarray(eq + 1));
    pos += len;
  }
  return out;
}

/**
 * Reads entries one by one. For each header, `onEntry` gets the header and
 * a function that yields the entry's data (it must be drained or the
 * reader drains it).
 */
export async function readTar(reader: ChunkReader,
                              onEntry: (h: TarEntryHeader, data: () => AsyncGenerator<Buffer>) => Promise<void>):
    Promise<void> {
  let pax = new Map<string, Buffer>();
  let longName: Buffer | undefined;
  let longLink: Buffer | undefined;
  let sawAny = false;
  for (;;) {
    const h = await reader.read(BLOCK);
    if (h.length === 0 && sawAny) throw invalid("no end-of-archive blocks");
    if (h.length < BLOCK) throw invalid(h.length ? "truncated header" : "empty archive");
    sawAny = true;
    if (h.every((b) => b === 0)) return; // end of archive (a second zero block may follow)
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : h[i]!;
    if (sum !== number(h, 148, 8)) throw invalid("header checksum mismatch");
    const typeflag = String.fromCharCode(h[156]!) === "\0" ? "0" : String.fromCharCode(h[156]!);
    let size = number(h, 124, 12);
    if (pax.has("size")) size = Number(pax.get("size")!.toString("latin1"));
    const padded = size + padTo512(size);
    const readData = async (): Promise<Buffer> => {
      const d = await reader.read(padded);
      if (d.length < padded) throw invalid("truncated member");
      return d.subarray(0, size);
    };
    if (typeflag === "x" || typeflag === "g") {
      const records = parsePax(await readData());
      if (typeflag === "x") pax = records;
      continue;
    }
    if (typeflag === "L") {
      longName = field(await readData(), 0, size);
      continue;
    }
    if (typeflag === "K") {
      longLink = field(await readData(), 0, size);
      continue;
    }
    const magic = h.subarray(257, 263).toString("latin1");
    let name = field(h, 0, 100);
    const prefix = magic.startsWith("ustar") ? field(h, 345, 155) : Buffer.alloc(0);
    if (prefix.length) name = Buffer.concat([prefix, Buffer.from("/"), name]);
    name = pax.get("path") ?? longName ?? name;
    const linkname = pax.get("linkpath") ?? longLink ?? field(h, 157, 100);
    let mtimeSec = number(h, 136, 12);
    let mtimeNsec = 0;
    const paxMtime = pax.get("mtime")?.toString("latin1");
    if (paxMtime && /^\d+(\.\d+)?$/.test(paxMtime)) {
      const [s, frac = ""] = paxMtime.split(".");
      mtimeSec = Number(s);
      mtimeNsec = Number((frac + "000000000").slice(0, 9));
    }
    const type = typeflag === "0" || typeflag === "7" ? "file"
      : typeflag === "5" ? "dir" : typeflag === "2" ? "symlink" : typeflag === "1" ? "hardlink" : "other";
    pax = new Map();
    longName = longLink = undefined;
    let remaining = type === "file" ? size : 0;
    const skipAfter = padded - remaining;
    async function* data(): AsyncGenerator<Buffer> {
      while (remaining > 0) {
        const chunk = await reader.readSome(Math.min(remaining, 1 << 20));
        if (!chunk.length) throw invalid("truncated member");
        remaining -= chunk.length;
        yield chunk;
      }
    }
    await onEntry({ name, type, typeflag, mode: number(h, 100, 8), size, mtimeSec, mtimeNsec, linkname }, data);
    for await (const _ of data()) { /* drain what the callback left */ }
    if (skipAfter > 0) {
      const pad = await reader.read(skipAfter);
      if (pad.length < skipAfter) throw invalid("truncated member");
    }
  }
}

