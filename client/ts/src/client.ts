// Client: the TypeScript face of the agentd protocol (docs/PROTOCOL.md).
//
// Mirrors the C++ client (docs/CLIENT.md): caller-minted exec ids make
// starts retry-safe, idempotent calls are retried with jittered backoff,
// stream() resumes with Last-Event-ID so every output byte arrives exactly
// once, and tree downloads are confined and staged. Calls may overlap; each
// takes its own pooled connection.
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import * as zlib from "node:zlib";

import { AgentdError, invalidRequest, isRetryable, protocolError, transportError } from "./errors.js";
import { extractTree, type ExtractOptions } from "./extract.js";
import { SseDecoder, type SseEvent } from "./sse.js";
import { writeTree } from "./tar.js";
import { bodyChunks, Transport, type Body, type ClientOptions, type Request } from "./transport.js";
import type {
  BootstrapResult, CodeRunResult, Cursors, ExecInfo, ExecRequest, FileStat, Health,
  OutputChunk, PollOptions, PollResult, RunCodeOptions, RunResult, StreamEvent, TreeStats,
} from "./types.js";

const EXEC_ID = /^[A-Za-z0-9._-]{1,128}$/;
/** The daemon sends a keepalive at least every 15 s; longer silence means a dead stream. */
const STREAM_SILENCE_MS = 45000;
const WAIT_ROUND_MS = 30000;

/**
 * A fresh exec id: `prefix` plus time and 64 random bits, so ids from many
 * hosts never collide and sort roughly by start time. Persist it before
 * starting, so a harness that crashes between start and answer retries it.
 */
export function mintExecId(prefix = "x"): string {
  const ms = Date.now().toString(16).padStart(11, "0");
  return `${prefix.slice(0, 98)}-${ms}-${randomBytes(8).toString("hex")}`;
}

function checkId(id: string): string {
  if (!EXEC_ID.test(id)) {
    throw invalidRequest("an exec id is 1 to 128 characters of [A-Za-z0-9._-]", { field: "id", id });
  }
  return id;
}

const q = encodeURIComponent;
const modeText = (mode: number | string) => typeof mode === "number" ? mode.toString(8).padStart(4, "0") : mode;

export type Compression = "none" | "gzip" | "zstd";

export interface RunOptions extends ExecRequest {
  /** The exec id; minted when absent. */
  id?: string;
  /** Output kept per stream (default 64 MiB); the rest is counted, not kept. */
  maxStdoutBytes?: number;
  maxStderrBytes?: number;
  /** Ack the exec once its output was read (default true). */
  ack?: boolean;
}

export interface ReadOptions {
  /** 1-based inclusive lines; endLine past EOF reads through EOF. */
  startLine?: number;
  endLine?: number;
  /** A byte range [first, last] (last inclusive; absent: to the end). */
  range?: { first: number; last?: number };
  /** readFile refuses answers larger than this (default 256 MiB; use readFileStream). */
  maxBytes?: number;
}

export interface WriteOptions {
  /** Exactly this mode: 0o755 or "0755". */
  mode?: number | string;
  parents?: boolean;
  user?: string;
  group?: string;
}

export interface StreamOptions {
  /** Called before each reconnect after a lost connection (attempt counts from 1). */
  onReconnect?: (attempt: number, why: AgentdError) => void;
  signal?: AbortSignal;
}

export class Client {
  private readonly t: Transport;

  constructor(options: ClientOptions = {}) {
    this.t = new Transport(options);
  }

  /** Use a re-minted token from now on. */
  setToken(token: string | undefined): void {
    this.t.token = token;
  }

  /** Closes pooled connections. */
  close(): void {
    this.t.close();
  }

  private async json<T>(method: string, path: string, body: unknown, idempotent: boolean,
                        extraWaitMs = 0): Promise<T> {
    const req: Request = { method, path, idempotent, extraWaitMs };
    if (body !== undefined) {
      req.body = Buffer.from(JSON.stringify(body));
      req.headers = { "Content-Type": "application/json" };
    }
    const a = await this.t.call(req);
    try {
      return JSON.parse(a.body.toString("utf8")) as T;
    } catch (e) {
      throw protocolError(`the daemon's answer is not JSON: ${(e as Error).message}`);
    }
  }

  // -- health and bootstrap ------------------------------------------------

  /** GET /v1/health (no token needed). */
  health(): Promise<Health> {
    return this.json("GET", "/v1/health", undefined, true);
  }

  /** POST /v1/bootstrap; the same token replays (retry-safe). The client then uses `token`. */
  async bootstrap(token: string, env?: Record<string, string>): Promise<BootstrapResult> {
    const r = await this.json<BootstrapResult>("POST", "/v1/bootstrap", env ? { token, env } : { token }, true);
    this.setToken(token);
    return r;
  }

  // -- exec ------------------------------------------------------------------

  private static startBody(r: ExecRequest): Record<string, unknown> {
    const { stdin, ...rest } = r;
    const body: Record<string, unknown> = { ...rest };
    for (const k of Object.keys(body)) if (body[k] === undefined) delete body[k];
    if (typeof stdin === "string") body.stdin = stdin;
    else if (stdin !== undefined) body.stdin_b64 = Buffer.from(stdin).toString("base64");
    return body;
  }

  /**
   * PUT /v1/execs/{id}: start a detached exec. Retry-safe: the same id and
   * request answer the same exec and never start a second process; the same
   * id with another request is exec_id_conflict.
   */
  startExec(id: string, request: ExecRequest): Promise<ExecInfo> {
    return this.json("PUT", `/v1/execs/${q(checkId(id))}`, Client.startBody(request), true);
  }

  /** GET /v1/execs/{id}: the exec object and output past the cursors (long poll with waitMs). */
  async pollExec(id: string, o: PollOptions = {}): Promise<PollResult> {
    const params: string[] = [];
    if (o.stdoutFrom !== undefined) params.push(`stdout_from=${o.stdoutFrom}`);
    if (o.stderrFrom !== undefined) params.push(`stderr_from=${o.stderrFrom}`);
    if (o.maxBytes !== undefined) params.push(`max_bytes=${o.maxBytes}`);
    if (o.waitMs) params.push(`wait_ms=${o.waitMs}`);
    const path = `/v1/execs/${q(checkId(id))}${params.length ? "?" + params.join("&") : ""}`;
    const doc = await this.json<Record<string, unknown>>("GET", path, undefined, true, o.waitMs ?? 0);
    const { stdout, stderr, ...exec } = doc;
    const chunk = (c: unknown): OutputChunk | undefined => {
      if (!c) return undefined;
      const x = c as { from: number; next: number; data_b64: string; gap?: { from: number; to: number } };
      return { from: x.from, next: x.next, data: Buffer.from(x.data_b64, "base64"), ...(x.gap ? { gap: x.gap } : {}) };
    };
    return { exec: exec as unknown as ExecInfo, stdout: chunk(stdout), stderr: chunk(stderr) };
  }

  /** Long polls until the exec exited; deadline_exceeded after `timeoutMs`. */
  async waitExec(id: string, timeoutMs?: number): Promise<ExecInfo> {
    const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
    for (;;) {
      const left = deadline === undefined ? WAIT_ROUND_MS : Math.max(0, deadline - Date.now());
      const r = await this.pollExec(id, { waitMs: Math.min(left, WAIT_ROUND_MS) });
      if (r.exec.state !== "running") return r.exec;
      if (deadline !== undefined && Date.now() >= deadline) {
        throw new AgentdError("deadline_exceeded", `exec ${id} still running after ${timeoutMs} ms`, 0, { id });
      }
    }
  }

  /** POST /v1/execs/{id}/kill: the signal goes to the whole process group (idempotent). */
  killExec(id: string, request: { signal?: string; grace_sec?: number } = {}): Promise<ExecInfo> {
    return this.json("POST", `/v1/execs/${q(checkId(id))}/kill`, request, true);
  }

  /** POST /v1/execs/{id}/ack: marks an exited exec read (idempotent). */
  ackExec(id: string): Promise<ExecInfo> {
    return this.json("POST", `/v1/execs/${q(checkId(id))}/ack`, {}, true);
  }

  /** GET /v1/execs. */
  async listExecs(): Promise<ExecInfo[]> {
    return (await this.json<{ execs: ExecInfo[] }>("GET", "/v1/execs", undefined, true)).execs;
  }

  /**
   * POST /v1/execs/{id}/stdin: bytes at stdin `offset`; answers the daemon's
   * next offset. Retry-safe: bytes the daemon already took are skipped.
   */
  async writeStdin(id: string, offset: number, data: string | Uint8Array, eof = false): Promise<number> {
    const a = await this.t.call({
      method: "POST", path: `/v1/execs/${q(checkId(id))}/stdin?offset=${offset}${eof ? "&eof=1" : ""}`,
      body: Buffer.from(data), headers: { "Content-Type": "application/octet-stream" }, idempotent: true,
    });
    return (JSON.parse(a.body.toString("utf8")) as { next: number }).next;
  }

  /** POST /v1/execs/{id}/resize (PTY execs). */
  resizeExec(id: string, rows: number, cols: number): Promise<ExecInfo> {
    return this.json("POST", `/v1/execs/${q(checkId(id))}/resize`, { rows, cols }, true);
  }

  /**
   * GET /v1/execs/{id}/events as an async iterator, from `cursors` on: stdout
   * and stderr events (each byte exactly once, in order), gap events (bytes
   * the daemon no longer retains), then one exit event. Every event carries
   * the cursors to persist for a reattach. A lost or silent connection is
   * resumed with Last-Event-ID after a jittered backoff.
   */
  async *stream(id: string, cursors: Cursors = { stdout: 0, stderr: 0 },
                opts: StreamOptions = {}): AsyncGenerator<StreamEvent> {
    checkId(id);
    const cur: Cursors = { ...cursors };
    let quiet = 0;
    for (let attempt = 1; ; attempt++) {
      let delivered = false;
      let failure: AgentdError;
      try {
        const res = await this.t.open({
          method: "GET", path: `/v1/execs/${q(id)}/events`, idempotent: true,
          headers: { Accept: "text/event-stream", "Last-Event-ID": `${cur.stdout}:${cur.stderr}` },
          idleTimeoutMs: STREAM_SILENCE_MS,
        });
        const decoder = new SseDecoder();
        const abort = () => res.destroy();
        opts.signal?.addEventListener("abort", abort);
        try {
          for await (const chunk of bodyChunks(res)) {
            for (const ev of decoder.feed(chunk)) {
              const out = applyEvent(ev, cur);
              delivered = true;
              if (out) {
                yield out;
                if (out.kind === "exit") return;
              }
            }
          }
          failure = transportError("event stream ended before the exit event");
        } finally {
          opts.signal?.removeEventListener("abort", abort);
          res.destroy(); // the daemon ends the stream after exit; never reuse
        }
      } catch (e) {
        if (opts.signal?.aborted) throw e;
        if (!isRetryable(e)) throw e;
        failure = e as AgentdError;
      }
      quiet = delivered ? 0 : quiet + 1;
      if (quiet > this.t.opts.maxStreamReconnects) {
        failure.details.reconnects = quiet - 1;
        throw failure;
      }
      opts.onReconnect?.(attempt, failure);
      await sleep(this.t.backoff(Math.max(quiet, 1)));
    }
  }

  /** Start, stream to the end, ack: the whole outcome of one command. */
  async run(command: string | string[], options: RunOptions = {}): Promise<RunResult> {
    const { id, maxStdoutBytes = 64 << 20, maxStderrBytes = 64 << 20, ack = true, ...request } = options;
    const execId = id ?? mintExecId("run");
    if (typeof command === "string") request.command = command;
    else request.argv = command;
    await this.startExec(execId, request);
    const kept = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
    const size = { stdout: 0, stderr: 0 };
    const truncated = { stdout: false, stderr: false };
    const limit = { stdout: maxStdoutBytes, stderr: maxStderrBytes };
    let final: ExecInfo | undefined;
    for await (const ev of this.stream(execId)) {
      if (ev.kind === "stdout" || ev.kind === "stderr") {
        const room = Math.max(0, limit[ev.kind] - size[ev.kind]);
        if (ev.data.length > room) truncated[ev.kind] = true;
        const part = ev.data.subarray(0, room);
        kept[ev.kind].push(part);
        size[ev.kind] += part.length;
      } else if (ev.kind === "gap") {
        truncated[ev.stream] = true;
      } else if (ev.kind === "exit") {
        final = ev.exec;
      }
    }
    if (!final) throw transportError("the stream ended without an exit event");
    if (ack) final = await this.ackExec(execId);
    return {
      id: execId, exitCode: final.exit_code ?? -1, signal: final.signal, timedOut: final.timed_out,
      killedBy: final.killed_by, durationMs: final.duration_ms,
      stdout: Buffer.concat(kept.stdout), stderr: Buffer.concat(kept.stderr),
      stdoutTruncated: truncated.stdout, stderrTruncated: truncated.stderr, exec: final,
    };
  }

  /**
   * POST /v1/run: one code action to completion: a one-line summary, bounded
   * output and the files it changed under cwd (not retried once sent).
   */
  runCode(runtime: "shell" | "python" | "ts", code: string, options: RunCodeOptions = {}): Promise<CodeRunResult> {
    return this.json("POST", "/v1/run", { runtime, code, ...options }, false);
  }

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

  /** The file as a stream of chunks (retried until the body starts; a cut body throws). */
  async *readFileStream(path: string, o: ReadOptions = {}): AsyncGenerator<Buffer> {
    const res = await this.t.open(this.readRequest(path, o));
    try {
      yield* bodyChunks(res);
    } finally {
      res.destroy();
    }
  }

  /** PUT /v1/fs/file: atomically replace the file; bytes and strings are retried, streams are not. */
  async writeFile(path: string, data: string | Uint8Array | Readable | AsyncIterable<Uint8Array>,
                  o: WriteOptions = {}): Promise<FileStat> {
    let target = `/v1/fs/file?path=${q(path)}`;
    if (o.mode !== undefined) target += `&mode=${modeText(o.mode)}`;
    if (o.parents) target += "&parents=1";
    if (o.user !== undefined) target += `&user=${q(o.user)}`;
    if (o.group !== undefined) target += `&group=${q(o.group)}`;
    const whole = typeof data === "string" || data instanceof Uint8Array;
    const body: Body = typeof data === "string" ? Buffer.from(data)
      : data instanceof Uint8Array ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) // no copy
      : data as Body;
    const a = await this.t.call({ method: "PUT", path: target, body, idempotent: whole,
      headers: { "Content-Type": "application/octet-stream" } });
    return JSON.parse(a.body.toString("utf8")) as FileStat;
  }

  stat(path: string, follow = false): Promise<FileStat> {
    return this.json("GET", `/v1/fs/stat?path=${q(path)}${follow ? "&follow=1" : ""}`, undefined, true);
  }

  async listDir(path: string): Promise<FileStat[]> {
    return (await this.json<{ entries: FileStat[] }>("GET", `/v1/fs/list?path=${q(path)}`, undefined, true)).entries;
  }

  /** POST /v1/fs/mkdir; retried only with parents (then an existing directory is a success). */
  mkdir(path: string, o: WriteOptions = {}): Promise<FileStat> {
    const body: Record<string, unknown> = { path };
    if (o.mode !== undefined) body.mode = modeText(o.mode);
    if (o.parents) body.parents = true;
    if (o.user !== undefined) body.user = o.user;
    if (o.group !== undefined) body.group = o.group;
    return this.json("POST", "/v1/fs/mkdir", body, !!o.parents);
  }

  /** POST /v1/fs/rename (never retried once sent). */
  rename(from: string, to: string, overwrite?: boolean): Promise<FileStat> {
    return this.json("POST", "/v1/fs/rename", overwrite === undefined ? { from, to } : { from, to, overwrite }, false);
  }

  /** DELETE /v1/fs: answers the number of entries removed (never retried once sent). */
  async remove(path: string, recursive = false): Promise<number> {
    const r = await this.json<{ removed: number }>("DELETE", `/v1/fs?path=${q(path)}${recursive ? "&recursive=1" : ""}`,
      undefined, false);
    return r.removed;
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
    throw new AgentdError("invalid_archive", `malformed archive: ${(e as Error).message}`, 0,
      { reason: (e as Error).message });
  }
}

function applyEvent(ev: SseEvent, cur: Cursors): StreamEvent | undefined {
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
    return { kind: "exit", exec: doc as unknown as ExecInfo, cursors: { ...cur } };
  }
  return undefined; // an event kind this client does not know
}
