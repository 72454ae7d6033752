// Client: the TypeScript face of the agentd protocol (docs/PROTOCOL.md).
//
// Mirrors the C++ client (docs/CLIENT.md): caller-minted exec ids make
// starts retry-safe, idempotent calls are retried with jittered backoff,
// stream() resumes with Last-Event-ID so every output byte arrives exactly
// once, and tree downloads are confined and staged. Calls may overlap; each
// takes its own pooled connection.
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";

import { AgentdError, invalidRequest, isRetryable, makeError, protocolError, transportError } from "./errors.js";
import { applyEvent, applyFrame } from "./events.js";
import { FRAMES_MEDIA_TYPE, FrameDecoder } from "./frames.js";
import { ReactiveCalls } from "./reactive.js";
import { SseDecoder } from "./sse.js";
import { bodyChunks } from "./transport.js";
import {
  bootstrapResultFromWire, codeRunResultFromWire, egressReportFromWire, execInfoFromWire, execRequestToWire, healthFromWire,
  resetReportFromWire, runCodeOptionsToWire, contextInfoFromWire,
} from "./wire.js";
import type {
  BootstrapResult, CodeRunResult, ContextInfo, ContextOptions, ContextRunOptions, Cursors, EgressReport, ExecInfo, ExecRequest, Health, KillOptions, OutputChunk,
  OutputMatch, PollOptions, PollResult, ResetOptions, ResetReport, RunCodeOptions, RunResult,
  StreamEvent, WaitForOutputOptions,
} from "./types.js";

export type {
  Compression, EditOptions, EditResult, LineEdit, Preconditions, ReadOptions, TextEdit, WriteOptions,
} from "./files.js";

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

export interface RunOptions extends ExecRequest {
  /** The exec id; minted when absent. */
  id?: string;
  /** Output kept per stream (default 64 MiB); the rest is counted, not kept. */
  maxStdoutBytes?: number;
  maxStderrBytes?: number;
  /** Ack the exec once its output was read (default true). */
  ack?: boolean;
}

export interface StreamOptions {
  /** Called before each reconnect after a lost connection (attempt counts from 1). */
  onReconnect?: (attempt: number, why: AgentdError) => void;
  signal?: AbortSignal;
}

/**
 * A 503 that carries the daemon's health document (docs/CLIENT.md,
 * "Health"): a JSON object naming its protocol, a `status` other than "ok"
 * and a `reason`. A proxy's 503 or garbage is not one.
 */
function unreadyHealth(status: number, body: Buffer): boolean {
  if (status !== 503) return false;
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString("utf8"));
  } catch {
    return false;
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return false;
  const d = doc as Record<string, unknown>;
  return typeof d.status === "string" && d.status !== "ok" && typeof d.reason === "string" &&
    d.reason !== "" && (typeof d.protocol === "number" || typeof d.protocol === "string");
}

export class Client extends ReactiveCalls {
  // -- health and bootstrap ------------------------------------------------

  /**
   * GET /v1/health (no token needed). Answers whatever protocol the daemon
   * speaks, and records it: the calls after refuse a daemon whose protocol
   * major this client does not speak (protocol_mismatch naming both). A
   * daemon that cannot take work answers 503 with its health: that is
   * returned at once, not thrown, with `status` ("draining", "resetting",
   * "quarantined", "state_dir_unwritable"), `reason` and `errno`; any other
   * 503 still throws.
   */
  async health(): Promise<Health> {
    const a = await this.t.call({
      method: "GET", path: "/v1/health", idempotent: true, negotiate: false, answerIf: unreadyHealth,
    });
    let doc: unknown;
    try {
      doc = JSON.parse(a.body.toString("utf8"));
    } catch (e) {
      throw protocolError(`the daemon's answer is not JSON: ${(e as Error).message}`);
    }
    this.t.noteHealth(doc);
    return healthFromWire(doc);
  }

  /** POST /v1/bootstrap; the same token replays (retry-safe). The client then uses `token`. */
  async bootstrap(token: string, env?: Record<string, string>): Promise<BootstrapResult> {
    const r = await this.json("POST", "/v1/bootstrap", env ? { token, env } : { token }, true);
    this.setToken(token);
    return bootstrapResultFromWire(r);
  }

  /**
   * POST /v1/reset: returns the guest to a clean state for the next tenant, or
   * quarantines it (`clean: false`, every remaining item named). With
   * `nextToken` the client uses that token from then on (when clean).
   * Retry-safe by `resetId`, even with the retired token.
   */
  async reset(options: ResetOptions = {}): Promise<ResetReport> {
    const body: Record<string, unknown> = { reset_id: options.resetId ?? `reset-${randomBytes(12).toString("hex")}` };
    if (options.nextToken !== undefined) body.next = { token: options.nextToken, env: options.env ?? {} };
    const r = resetReportFromWire(await this.json("POST", "/v1/reset", body, true));
    if (r.clean && options.nextToken !== undefined) this.setToken(options.nextToken);
    return r;
  }

  // -- exec ------------------------------------------------------------------

  /**
   * PUT /v1/execs/{id}: start a detached exec. Retry-safe: the same id and
   * request answer the same exec and never start a second process; the same
   * id with another request is exec_id_conflict.
   */
  async startExec(id: string, request: ExecRequest): Promise<ExecInfo> {
    return execInfoFromWire(await this.json("PUT", `/v1/execs/${q(checkId(id))}`, execRequestToWire(request), true));
  }

  private static pollQuery(o: PollOptions): string {
    const params: string[] = [];
    if (o.stdoutFrom !== undefined) params.push(`stdout_from=${o.stdoutFrom}`);
    if (o.stderrFrom !== undefined) params.push(`stderr_from=${o.stderrFrom}`);
    if (o.maxBytes !== undefined) params.push(`max_bytes=${o.maxBytes}`);
    if (o.waitMs) params.push(`wait_ms=${o.waitMs}`);
    if (o.untilExit) params.push("until=exit");
    return params.length ? "?" + params.join("&") : "";
  }

  private static pollResult(doc: Record<string, unknown>): PollResult {
    const { stdout, stderr, ...exec } = doc;
    const chunk = (c: unknown): OutputChunk | undefined => {
      if (!c) return undefined;
      const x = c as { from: number; next: number; data_b64: string; gap?: { from: number; to: number } };
      return {
        start: x.from, next: x.next, data: Buffer.from(x.data_b64, "base64"),
        ...(x.gap ? { gap: { from: x.gap.from, to: x.gap.to } } : {}),
      };
    };
    return { exec: execInfoFromWire(exec), stdout: chunk(stdout), stderr: chunk(stderr) };
  }

  /** GET /v1/execs/{id}: the exec object and output past the cursors (long poll with waitMs). */
  async pollExec(id: string, o: PollOptions = {}): Promise<PollResult> {
    const path = `/v1/execs/${q(checkId(id))}${Client.pollQuery(o)}`;
    return Client.pollResult(await this.json<Record<string, unknown>>("GET", path, undefined, true, o.waitMs ?? 0));
  }

  /**
   * PUT /v1/execs/{id} with Poll's query ("Start and wait"): starts like
   * startExec (retry-safe by id), answers like pollExec once started. A
   * short command's exit and whole output in one round trip:
   * `{ stdoutFrom: 0, stderrFrom: 0, waitMs: 30000, untilExit: true }`.
   */
  async startExecAndWait(id: string, request: ExecRequest, o: PollOptions): Promise<PollResult> {
    const path = `/v1/execs/${q(checkId(id))}${Client.pollQuery(o)}`;
    return Client.pollResult(
      await this.json<Record<string, unknown>>("PUT", path, execRequestToWire(request), true, o.waitMs ?? 0));
  }

  /**
   * GET /v1/execs/{id}/stdout|stderr (no follow): the retained bytes from
   * `start`. `chunk.start` > `start` means the bytes before it are no longer
   * retained (`gap` says which). Refused beyond `maxBytes` (default 256 MiB).
   */
  async readOutput(id: string, stream: "stdout" | "stderr" = "stdout", start = 0,
                   o: { maxBytes?: number } = {}): Promise<OutputChunk> {
    if (stream !== "stdout" && stream !== "stderr") {
      throw invalidRequest('stream must be "stdout" or "stderr"', { field: "stream" });
    }
    const a = await this.t.call({ method: "GET", path: `/v1/execs/${q(checkId(id))}/${stream}?from=${start}`,
      idempotent: true }, o.maxBytes ?? 256 << 20);
    const header = (name: string, fallback: number) => {
      const v = a.headers[name];
      return typeof v === "string" && /^\d{1,19}$/.test(v) ? Number(v) : fallback;
    };
    const first = header("agentd-from", start);
    const next = header("agentd-next", first + a.body.length);
    return { start: first, next, data: a.body, ...(first > start ? { gap: { from: start, to: first } } : {}) };
  }

  /** Long polls until the exec exited; deadline_exceeded after `timeoutMs`. */
  async waitExec(id: string, timeoutMs?: number): Promise<ExecInfo> {
    const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
    for (;;) {
      const left = deadline === undefined ? WAIT_ROUND_MS : Math.max(0, deadline - Date.now());
      const r = await this.pollExec(id, { waitMs: Math.min(left, WAIT_ROUND_MS) });
      if (r.exec.state !== "running") return r.exec;
      if (deadline !== undefined && Date.now() >= deadline) {
        throw makeError("deadline_exceeded", `exec ${id} still running after ${timeoutMs} ms`, 0, { id });
      }
    }
  }

  /**
   * Waits until the regular expression `pattern` (PCRE2) matches the exec's
   * output from `cursor` on, even across output chunks (docs/PROTOCOL.md,
   * "Wait for output"). Answers the match, or (matched false) why not:
   * "exited", or "timeout" after `timeoutMs`. Read-only.
   */
  async waitForOutput(id: string, pattern: string, o: WaitForOutputOptions = {}): Promise<OutputMatch> {
    let cursor = o.cursor ?? 0;
    const stream = o.stream ?? "stdout";
    const start = Date.now();
    for (;;) {
      const [doc, over] = await this.waitRound<Record<string, unknown>>(
        `/v1/execs/${q(checkId(id))}?until=match&pattern=${q(pattern)}&stream=${stream}&cursor=${cursor}`,
        o.timeoutMs, start);
      const exec: Record<string, unknown> = { ...doc };
      for (const k of ["stdout", "stderr", "match"]) delete exec[k];
      const m = doc.match as {
        stream: "stdout" | "stderr"; matched: boolean; offset?: number; end?: number; text_b64?: string;
        reason?: string; next: number; gap?: { from: number; to: number };
      };
      const answer: OutputMatch = {
        stream: m.stream, matched: m.matched, next: m.next, exec: execInfoFromWire(exec),
        ...(m.matched
          ? { offset: m.offset, end: m.end, text: Buffer.from(m.text_b64 ?? "", "base64") }
          : { reason: m.reason }),
        ...(m.gap ? { gap: { from: m.gap.from, to: m.gap.to } } : {}),
      };
      if (m.matched || m.reason === "exited") return answer;
      // A round's timeout or a scan bound: resume where nothing is lost.
      cursor = m.next;
      if (m.reason === "timeout" && over) return answer;
    }
  }

  /** Waits until TCP `port` listens in the guest ("Wait for a port"); false after `timeoutMs`. */
  async waitForPort(port: number, timeoutMs?: number): Promise<boolean> {
    const start = Date.now();
    for (;;) {
      const [doc, over] = await this.waitRound<{ listening: boolean }>(
        `/v1/ports?wait_for=${port}`, timeoutMs, start);
      if (doc.listening || over) return doc.listening;
    }
  }

  /** Waits until `path` exists (or, with `gone`, no longer does), confined ("Wait for a path"); false after `timeoutMs`. */
  async waitForPath(path: string, o: { gone?: boolean; timeoutMs?: number } = {}): Promise<boolean> {
    const start = Date.now();
    const target = `/v1/fs/stat?path=${q(path)}&until=${o.gone ? "gone" : "exists"}`;
    for (;;) {
      const [doc, over] = await this.waitRound<{ met: boolean }>(target, o.timeoutMs, start);
      if (doc.met || over) return doc.met;
    }
  }

  // One round of a condition wait: `target` plus wait_ms, at most
  // WAIT_ROUND_MS and at most what is left of `timeoutMs` since `start`;
  // with whether that time is now over.
  private async waitRound<T>(target: string, timeoutMs: number | undefined, start: number): Promise<[T, boolean]> {
    const left = timeoutMs === undefined ? WAIT_ROUND_MS : Math.max(0, start + timeoutMs - Date.now());
    const waitMs = Math.min(left, WAIT_ROUND_MS);
    const doc = await this.json<T>("GET", `${target}&wait_ms=${waitMs}`, undefined, true, waitMs);
    return [doc, timeoutMs !== undefined && Date.now() >= start + timeoutMs];
  }

  /** POST /v1/execs/{id}/kill: the signal goes to the whole process group (idempotent). */
  async killExec(id: string, o: KillOptions = {}): Promise<ExecInfo> {
    const body: Record<string, unknown> = {};
    if (o.signal !== undefined) body.signal = o.signal;
    if (o.graceSec !== undefined) body.grace_sec = o.graceSec;
    return execInfoFromWire(await this.json("POST", `/v1/execs/${q(checkId(id))}/kill`, body, true));
  }

  /** POST /v1/execs/{id}/ack: marks an exited exec read (idempotent). */
  async ackExec(id: string): Promise<ExecInfo> {
    return execInfoFromWire(await this.json("POST", `/v1/execs/${q(checkId(id))}/ack`, {}, true));
  }

  /** GET /v1/execs/{id}/egress: every connect and UDP send of the exec and its descendants,
   *  by destination and verdict (docs/PROTOCOL.md, "Egress"). */
  async execEgress(id: string): Promise<EgressReport> {
    return egressReportFromWire(await this.json("GET", `/v1/execs/${q(checkId(id))}/egress`, undefined, true));
  }

  /** GET /v1/execs. */
  async listExecs(): Promise<ExecInfo[]> {
    const doc = await this.json<{ execs?: unknown }>("GET", "/v1/execs", undefined, true);
    return Array.isArray(doc.execs) ? doc.execs.map(execInfoFromWire) : [];
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
  async resizeExec(id: string, rows: number, cols: number): Promise<ExecInfo> {
    return execInfoFromWire(await this.json("POST", `/v1/execs/${q(checkId(id))}/resize`, { rows, cols }, true));
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
          // Frames when the daemon offers them; an older one answers SSE.
          headers: { Accept: `${FRAMES_MEDIA_TYPE}, text/event-stream`, "Last-Event-ID": `${cur.stdout}:${cur.stderr}` },
          idleTimeoutMs: STREAM_SILENCE_MS,
        });
        const frames = String(res.headers["content-type"] ?? "").startsWith(FRAMES_MEDIA_TYPE);
        const decoder = new SseDecoder();
        const frameDecoder = new FrameDecoder();
        const abort = () => res.destroy();
        opts.signal?.addEventListener("abort", abort);
        try {
          for await (const chunk of bodyChunks(res)) {
            if (frames) {
              for (const f of frameDecoder.feed(chunk)) {
                const { event, delivered: any } = applyFrame(f, cur);
                if (any) delivered = true;
                if (event) {
                  yield event;
                  if (event.kind === "exit") return;
                }
              }
              continue;
            }
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

  /** Start and wait, stream what is left to the end, ack: the whole outcome of one command. */
  async run(command: string | string[], options: RunOptions = {}): Promise<RunResult> {
    const { id, maxStdoutBytes = 64 << 20, maxStderrBytes = 64 << 20, ack = true, ...request } = options;
    const execId = id ?? mintExecId("run");
    if (typeof command === "string") request.command = command;
    else request.argv = command;
    const kept = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
    const size = { stdout: 0, stderr: 0 };
    const truncated = { stdout: false, stderr: false };
    const limit = { stdout: maxStdoutBytes, stderr: maxStderrBytes };
    const keep = (stream: "stdout" | "stderr", data: Buffer) => {
      const room = Math.max(0, limit[stream] - size[stream]);
      if (data.length > room) truncated[stream] = true;
      const part = data.subarray(0, room);
      kept[stream].push(part);
      size[stream] += part.length;
    };
    // Start and wait ("Start and wait"): a short command's exit and whole
    // output in this one request; what it leaves (a longer run, or more
    // output than one answer carries) the event stream delivers from the
    // cursors reached.
    const first = await this.startExecAndWait(execId, request,
      { stdoutFrom: 0, stderrFrom: 0, waitMs: WAIT_ROUND_MS, untilExit: true });
    const cursors: Cursors = { stdout: 0, stderr: 0 };
    for (const stream of ["stdout", "stderr"] as const) {
      const chunk = first[stream];
      if (!chunk) continue;
      if (chunk.gap) truncated[stream] = true;
      keep(stream, chunk.data);
      cursors[stream] = chunk.next;
    }
    const e = first.exec;
    let final: ExecInfo | undefined =
      e.state !== "running" && cursors.stdout >= e.stdoutBytes && cursors.stderr >= e.stderrBytes ? e : undefined;
    if (!final) {
      for await (const ev of this.stream(execId, cursors)) {
        if (ev.kind === "stdout" || ev.kind === "stderr") keep(ev.kind, ev.data);
        else if (ev.kind === "gap") truncated[ev.stream] = true;
        else if (ev.kind === "exit") final = ev.exec;
      }
    }
    if (!final) throw transportError("the stream ended without an exit event");
    if (ack) final = await this.ackExec(execId);
    return {
      id: execId, exitCode: final.exitCode ?? -1, signal: final.signal, timedOut: final.timedOut,
      killedBy: final.killedBy, durationMs: final.durationMs,
      stdout: Buffer.concat(kept.stdout), stderr: Buffer.concat(kept.stderr),
      stdoutTruncated: truncated.stdout, stderrTruncated: truncated.stderr, exec: final,
    };
  }

  /**
   * POST /v1/run: one code action to completion: a one-line summary, bounded
   * output and the files it changed under cwd (not retried once sent).
   */
  async runCode(runtime: "shell" | "python" | "ts", code: string, options: RunCodeOptions = {}): Promise<CodeRunResult> {
    return codeRunResultFromWire(
      await this.json("POST", "/v1/run", { runtime, code, ...runCodeOptionsToWire(options) }, false));
  }

  /**
   * POST /v1/contexts: a persistent interpreter ("python" or "ts") whose names
   * and imports last between runs (idempotent for the same id and options).
   */
  async createContext(id: string, runtime: "python" | "ts" = "python", options: ContextOptions = {}): Promise<ContextInfo> {
    return contextInfoFromWire(
      await this.json("POST", "/v1/contexts", { id: checkId(id), runtime, ...runCodeOptionsToWire(options) }, true));
  }

  /**
   * POST /v1/contexts/{id}/run: code in the context, answered like runCode.
   * Retry-safe: a run id (minted when absent) makes a retry replay the answer.
   */
  async runInContext(id: string, code: string, options: ContextRunOptions = {}): Promise<CodeRunResult> {
    const body: Record<string, unknown> = { code, run_id: options.runId ?? "run-" + randomBytes(8).toString("hex") };
    if (options.timeoutSec !== undefined) body.timeout_sec = options.timeoutSec;
    if (options.artifactsDir !== undefined) body.artifacts_dir = options.artifactsDir;
    if (options.egress !== undefined) body.egress = options.egress;
    return codeRunResultFromWire(await this.json("POST", `/v1/contexts/${q(id)}/run`, body, true));
  }

  /** GET /v1/contexts/{id}. */
  async getContext(id: string): Promise<ContextInfo> {
    return contextInfoFromWire(await this.json("GET", `/v1/contexts/${q(id)}`, undefined, true));
  }

  /** GET /v1/contexts: every context, ended ones with what ended them. */
  async listContexts(): Promise<ContextInfo[]> {
    const w = await this.json<{ contexts?: unknown[] }>("GET", "/v1/contexts", undefined, true);
    return (w.contexts ?? []).map(contextInfoFromWire);
  }

  /** POST /v1/contexts/{id}/reset: a fresh interpreter with the same options. */
  async resetContext(id: string): Promise<ContextInfo> {
    return contextInfoFromWire(await this.json("POST", `/v1/contexts/${q(id)}/reset`, undefined, false));
  }

  /** DELETE /v1/contexts/{id}: kills the interpreter and forgets the context. */
  async deleteContext(id: string): Promise<ContextInfo> {
    return contextInfoFromWire(await this.json("DELETE", `/v1/contexts/${q(id)}`, undefined, false));
  }
}
