// File and tree calls (docs/PROTOCOL.md, "Files" and "Trees"): streamed
// reads and atomic writes, metadata, and tree transfers through the
// package's own tar writer and confined, staged extraction.
import { write as fsWrite } from "node:fs";
import { Readable, type Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import * as zlib from "node:zlib";

import { Base } from "./base.js";
import { AgentdError, invalidRequest, isRetryable, makeError } from "./errors.js";
import { extractTree, type ExtractOptions } from "./extract.js";
import { writeTree } from "./tar.js";
import { bodyChunks, FileBody, type Body, type Request } from "./transport.js";
import type { FileStat, TreeStats } from "./types.js";
import { fileStatFromWire } from "./wire.js";

const q = encodeURIComponent;
const modeText = (mode: number | string) => typeof mode === "number" ? mode.toString(8).padStart(4, "0") : mode;

export type Compression = "none" | "gzip" | "zstd";

export interface ReadOptions {
  /** 1-based inclusive lines; endLine past EOF reads through EOF. */
  startLine?: number;
  endLine?: number;
  /** A byte range [first, last] (last inclusive; absent: to the end). */
  range?: { first: number; last?: number };
  /** readFile refuses answers larger than this (default 256 MiB; use readFileStream). */
  maxBytes?: number;
}

/**
 * Preconditions of a write, edit, rename or delete (docs/PROTOCOL.md,
 * "ETags and preconditions"); one that does not hold throws
 * `precondition_failed` (412) and nothing changes.
 */
export interface Preconditions {
  /** The target must be a regular file with this ETag (from stat or readFileWithEtag), or exist for "*". */
  ifMatch?: string;
  /** The target must not exist (create only); for rename, the destination. */
  ifNoneMatch?: boolean;
}

export interface WriteOptions extends Preconditions {
  /** Exactly this mode: 0o755 or "0755". */
  mode?: number | string;
  parents?: boolean;
  user?: string;
  group?: string;
  /**
   * false: writeFile's answer has no etag and the daemon spends no time
   * hashing the upload (PUT /v1/fs/file?etag=0); stat or readFileWithEtag
   * hash the file later, when asked. Default true.
   */
  etag?: boolean;
}

/** One exact replacement: `old` must occur exactly `count` times (default 1). */
export interface TextEdit {
  old: string;
  new: string;
  count?: number;
}

/** Lines [startLine, endLine] (1-based, inclusive) replaced by `text`; endLine = startLine - 1 inserts. */
export interface LineEdit {
  startLine: number;
  endLine: number;
  text: string;
}

export interface EditOptions {
  lineEdits?: LineEdit[];
  /** Edit only this version of the file. */
  ifMatch?: string;
}

/** The answer of POST /v1/fs/edit. */
export interface EditResult {
  path: string;
  /** The new content's ETag. */
  etag: string;
  size: number;
  /** A unified diff of the change. */
  diff: string;
}

function preconditionHeaders(o: Preconditions): Record<string, string> {
  const h: Record<string, string> = {};
  if (o.ifMatch !== undefined) h["If-Match"] = o.ifMatch;
  if (o.ifNoneMatch) h["If-None-Match"] = "*";
  return h;
}

export class FileCalls extends Base {
  // -- files -----------------------------------------------------------------

  private readRequest(path: string, o: ReadOptions): Request {
    let target = `/v1/fs/file?path=${q(path)}`;
    if (o.startLine !== undefined) target += `&start_line=${o.startLine}`;
    if (o.endLine !== undefined) target += `&end_line=${o.endLine}`;
    const headers: Record<string, string> = {};
    if (o.range) headers.Range = `bytes=${o.range.first}-${o.range.last ?? ""}`;
    return { method: "GET", path: target, headers, idempotent: true };
  }

  /** A file's bytes, lines [startLine, endLine], or a byte range. */
  async readFile(path: string, o: ReadOptions = {}): Promise<Buffer> {
    return (await this.t.call(this.readRequest(path, o), o.maxBytes ?? 256 << 20)).body;
  }

  /** The bytes with the ETag of exactly those bytes (null where the daemon has none). */
  async readFileWithEtag(path: string, o: ReadOptions = {}): Promise<{ data: Buffer; etag: string | null }> {
    const a = await this.t.call(this.readRequest(path, o), o.maxBytes ?? 256 << 20);
    const tag = a.headers.etag;
    return { data: a.body, etag: typeof tag === "string" ? tag : null };
  }

  /**
   * GET /v1/fs/file into `sink` as it arrives (a function, awaited per
   * chunk, or a Writable, whose backpressure is honoured); answers the byte
   * count. Memory stays flat for any size. Retried until the body starts; a
   * body cut short throws transport_error after the sink got part of it.
   */
  async readFileTo(path: string, sink: ((chunk: Buffer) => unknown) | Writable, o: ReadOptions = {}): Promise<number> {
    let total = 0;
    for await (const chunk of this.readFileStream(path, o)) {
      total += chunk.length;
      if (typeof sink === "function") await sink(chunk);
      else if (!sink.write(chunk)) await new Promise<void>((resolve) => {
        const done = () => {
          sink.off("drain", done);
          sink.off("close", done);
          resolve();
        };
        sink.on("drain", done);
        sink.on("close", done);
      });
    }
    return total;
  }

  /**
   * GET /v1/fs/file written to the open descriptor `fd` (not closed here; at
   * its position, or appended if it is O_APPEND); answers the byte count.
   * Each chunk is written whole (short writes resumed) before the next is
   * read; `progress` hears the bytes of each chunk written. Retried until
   * the body starts; a body cut short throws transport_error after `fd` got
   * part of it; a failed write of `fd` throws its Node.js error.
   */
  async readFileToFd(path: string, fd: number, o: ReadOptions = {},
                     progress?: (bytes: number) => unknown): Promise<number> {
    let total = 0;
    for await (const chunk of this.readFileStream(path, o)) {
      for (let off = 0; off < chunk.length;) {
        off += await new Promise<number>((resolve, reject) =>
          fsWrite(fd, chunk, off, chunk.length - off, null, (err, n) => err ? reject(err) : resolve(n)));
      }
      total += chunk.length;
      progress?.(chunk.length);
    }
    return total;
  }

  /** The file as a stream of chunks (retried until the body starts; a cut body throws). */
  async *readFileStream(path: string, o: ReadOptions = {}): AsyncGenerator<Buffer> {
    const res = await this.t.open(this.readRequest(path, o));
    try {
      yield* bodyChunks(res);
    } finally {
      res.destroy();
    }
  }

  /**
   * PUT /v1/fs/file: atomically replace the file; bytes and strings are
   * retried, streams and guarded writes (ifMatch, ifNoneMatch) are not.
   */
  async writeFile(path: string, data: string | Uint8Array | Readable | AsyncIterable<Uint8Array>,
                  o: WriteOptions = {}): Promise<FileStat> {
    const whole = typeof data === "string" || data instanceof Uint8Array;
    const body: Body = typeof data === "string" ? Buffer.from(data)
      : data instanceof Uint8Array ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) // no copy
      : data as Body;
    return this.put(path, body, whole, o);
  }

  /**
   * writeFile from the first `size` bytes of the open regular file `fd`
   * (not closed here), sent with Content-Length and read by position: the
   * daemon checks free space before it reads them, and a retry sends the
   * file from its start again (retried like writeFile unless guarded). A
   * file shorter than `size` is an io_error and leaves the old file.
   */
  writeFileFromFd(path: string, fd: number, size: number, o: WriteOptions = {}): Promise<FileStat> {
    return this.put(path, new FileBody(fd, size), true, o);
  }

  /** PUT /v1/fs/file; `resendable`: the body can be sent again whole (then retried unless guarded). */
  private async put(path: string, body: Body, resendable: boolean, o: WriteOptions): Promise<FileStat> {
    let target = `/v1/fs/file?path=${q(path)}`;
    if (o.mode !== undefined) target += `&mode=${modeText(o.mode)}`;
    if (o.parents) target += "&parents=1";
    if (o.user !== undefined) target += `&user=${q(o.user)}`;
    if (o.group !== undefined) target += `&group=${q(o.group)}`;
    if (o.etag === false) target += "&etag=0";
    const guard = preconditionHeaders(o);
    const a = await this.t.call({ method: "PUT", path: target, body,
      idempotent: resendable && Object.keys(guard).length === 0,
      headers: { "Content-Type": "application/octet-stream", ...guard } });
    return fileStatFromWire(JSON.parse(a.body.toString("utf8")));
  }

  /**
   * writeFile from a streaming source (a Readable or an async iterable of
   * bytes), sent chunked as it is read: memory stays flat for any size.
   * Never retried once started (the source may not be readable twice).
   */
  writeFileFrom(path: string, source: Readable | AsyncIterable<Uint8Array>, o: WriteOptions = {}): Promise<FileStat> {
    if (typeof source === "string" || source instanceof Uint8Array) {
      return Promise.reject(invalidRequest("writeFileFrom takes a Readable or an async iterable (writeFile takes bytes)",
        { field: "source" }));
    }
    return this.writeFile(path, source, o);
  }

  async stat(path: string, follow = false): Promise<FileStat> {
    return fileStatFromWire(await this.json("GET", `/v1/fs/stat?path=${q(path)}${follow ? "&follow=1" : ""}`,
      undefined, true));
  }

  async listDir(path: string): Promise<FileStat[]> {
    const doc = await this.json<{ entries?: unknown }>("GET", `/v1/fs/list?path=${q(path)}`, undefined, true);
    return Array.isArray(doc.entries) ? doc.entries.map(fileStatFromWire) : [];
  }

  /** POST /v1/fs/mkdir; retried only with parents (then an existing directory is a success). */
  async makeDir(path: string, o: WriteOptions = {}): Promise<FileStat> {
    const body: Record<string, unknown> = { path };
    if (o.mode !== undefined) body.mode = modeText(o.mode);
    if (o.parents) body.parents = true;
    if (o.user !== undefined) body.user = o.user;
    if (o.group !== undefined) body.group = o.group;
    return fileStatFromWire(await this.json("POST", "/v1/fs/mkdir", body, !!o.parents));
  }

  /**
   * POST /v1/fs/rename (never retried once sent). `guard.ifMatch` applies
   * to `from`, `guard.ifNoneMatch` to `to`.
   */
  async rename(from: string, to: string, overwrite?: boolean, guard: Preconditions = {}): Promise<FileStat> {
    return fileStatFromWire(await this.json("POST", "/v1/fs/rename",
      overwrite === undefined ? { from, to } : { from, to, overwrite }, false, 0, preconditionHeaders(guard)));
  }

  /**
   * DELETE /v1/fs: answers the number of entries removed (never retried
   * once sent). With `o.ifMatch` only that version of the file goes.
   */
  async remove(path: string, recursive = false, o: { ifMatch?: string } = {}): Promise<number> {
    const r = await this.json<{ removed: number }>("DELETE", `/v1/fs?path=${q(path)}${recursive ? "&recursive=1" : ""}`,
      undefined, false, 0, preconditionHeaders(o));
    return r.removed;
  }

  /**
   * POST /v1/fs/edit (docs/PROTOCOL.md, "Edit"): exact replacements and
   * line-range replacements applied together by one atomic replace, or
   * none (`edit_mismatch` names the edit, the count found and its lines).
   * Never retried: an applied edit's retry would find its text gone.
   */
  async edit(path: string, edits: TextEdit[], o: EditOptions = {}): Promise<EditResult> {
    const body: Record<string, unknown> = { path };
    if (edits.length > 0) body.edits = edits.map((e) => ({ old: e.old, new: e.new, count: e.count ?? 1 }));
    if (o.lineEdits && o.lineEdits.length > 0) {
      body.line_edits = o.lineEdits.map((e) => ({ start_line: e.startLine, end_line: e.endLine, text: e.text }));
    }
    if (o.ifMatch !== undefined) body.if_match = o.ifMatch;
    const r = await this.json<Record<string, unknown>>("POST", "/v1/fs/edit", body, false);
    return { path: r.path as string, etag: r.etag as string, size: r.size as number, diff: r.diff as string };
  }

  async realpath(path: string): Promise<string> {
    return (await this.json<{ path: string }>("GET", `/v1/fs/realpath?path=${q(path)}`, undefined, true)).path;
  }

  // -- trees -----------------------------------------------------------------

  /**
   * PUT /v1/fs/tar: `local`'s contents extracted under `remote` with full
   * fidelity. The tar is produced while it is sent; a local failure never
   * sends the final chunk, so the daemon keeps nothing. A lost connection
   * rebuilds and resends the archive.
   */
  async uploadDir(local: string, remote: string,
                  o: { compress?: Compression; parents?: boolean } = {}): Promise<TreeStats> {
    const compress = o.compress ?? "none";
    const path = `/v1/fs/tar?path=${q(remote)}${o.parents ? "&parents=1" : ""}`;
    for (let attempt = 1; ; attempt++) {
      const stats = { entries: 0, bytes: 0 };
      let body: Body = Readable.from(writeTree(local, stats), { objectMode: false });
      if (compress !== "none") body = (body as Readable).pipe(compressor(compress));
      try {
        const a = await this.t.call({ method: "PUT", path, body,
          headers: { "Content-Type": compress === "none" ? "application/x-tar" : `application/${compress}` } });
        const doc = JSON.parse(a.body.toString("utf8")) as { entries: number };
        return { entries: doc.entries, bytes: stats.bytes };
      } catch (e) {
        if (attempt < this.t.opts.maxAttempts && isRetryable(e)) {
          await sleep(this.t.backoff(attempt));
          continue;
        }
        throw e;
      }
    }
  }

  /**
   * GET /v1/fs/tar extracted into `local`, confined and staged (see
   * extract.ts). A cut transfer starts again in a fresh staging directory.
   */
  async downloadDir(remote: string, local: string,
                    o: { compress?: Compression } & ExtractOptions = {}): Promise<TreeStats> {
    const compress = o.compress ?? "none";
    if (compress === "zstd") compressor("zstd"); // refuses early where zlib has no zstd
    for (let attempt = 1; ; attempt++) {
      const res = await this.t.open({ method: "GET", path: `/v1/fs/tar?path=${q(remote)}&compress=${compress}`,
        idempotent: true });
      try {
        return await extractTree(decompressed(bodyChunks(res)), local, o);
      } catch (e) {
        res.destroy();
        if (attempt < this.t.opts.maxAttempts && isRetryable(e)) {
          await sleep(this.t.backoff(attempt));
          continue;
        }
        throw e;
      }
    }
  }
}

function compressor(kind: "gzip" | "zstd"): zlib.Gzip {
  if (kind === "gzip") return zlib.createGzip({ level: 6 });
  const make = (zlib as unknown as { createZstdCompress?: () => zlib.Gzip }).createZstdCompress;
  if (!make) throw invalidRequest("this Node.js has no zstd in node:zlib (Node 22.15+); use gzip", { field: "compress" });
  return make();
}

/** Chunks of the archive, decompressed by its magic bytes (gzip, zstd or plain). */
async function* decompressed(chunks: AsyncGenerator<Buffer>): AsyncGenerator<Buffer> {
  const first = await chunks.next();
  if (first.done) return;
  const head = first.value;
  const rest = async function* () {
    yield head;
    yield* chunks;
  };
  let inflater: NodeJS.ReadWriteStream | undefined;
  if (head[0] === 0x1f && head[1] === 0x8b) inflater = zlib.createGunzip();
  else if (head.readUInt32LE(0) === 0xfd2fb528) {
    const make = (zlib as unknown as { createZstdDecompress?: () => NodeJS.ReadWriteStream }).createZstdDecompress;
    if (!make) throw invalidRequest("this Node.js has no zstd in node:zlib", { field: "compress" });
    inflater = make();
  }
  if (!inflater) {
    yield* rest();
    return;
  }
  const source = Readable.from(rest());
  source.on("error", (e) => (inflater as unknown as Readable).destroy(e));
  source.pipe(inflater as unknown as NodeJS.WritableStream);
  try {
    for await (const chunk of inflater as unknown as AsyncIterable<Buffer>) yield chunk;
  } catch (e) {
    if (e instanceof AgentdError) throw e;
    throw makeError("invalid_archive", `malformed archive: ${(e as Error).message}`, 0,
      { reason: (e as Error).message });
  }
}
