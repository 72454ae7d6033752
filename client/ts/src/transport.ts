// HTTP/1.1 transport over node:http (TCP or a Unix socket): keep-alive
// connections, deadlines, and the retry policy of the C++ client
// (docs/CLIENT.md, "Retry policy"):
//  - a request whose connection could not be made is retried whatever it
//    is (nothing was sent);
//  - after bytes were sent, only idempotent requests are retried, on a lost
//    connection, a deadline, or HTTP 500/502/503/504, with the same
//    method, target and body, with jittered exponential backoff;
//  - a request with a streamed body is never retried once sent; a FileBody
//    is sent again from its start.
import { read as fsRead } from "node:fs";
import * as http from "node:http";
import type { Socket } from "node:net";
import type { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";

import {
  AgentdError, deadlineExceeded, errorFromBody, invalidRequest, makeError, protocolError, transportError,
} from "./errors.js";
import { PROTOCOL_MAJOR, protocolMajor, protocolRefusal } from "./version.js";

export interface ClientOptions {
  /** http://HOST:PORT or unix:/path/to/socket. Default http://127.0.0.1:7700. */
  url?: string;
  /** Bearer token; absent sends no Authorization header. */
  token?: string;
  connectTimeoutMs?: number;
  /** One attempt of one request (a long poll or stream adds its own wait). */
  requestTimeoutMs?: number;
  /** Attempts of an idempotent call. */
  maxAttempts?: number;
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /** A stream gives up after this many reconnects in a row that deliver nothing. */
  maxStreamReconnects?: number;
  maxIdleConnections?: number;
}

export interface Endpoint {
  kind: "tcp" | "unix";
  host: string;
  port: number;
  socketPath?: string;
  url: string;
}

export function parseUrl(url: string): Endpoint {
  if (url.startsWith("unix:")) {
    let path = url.slice(5);
    if (path.startsWith("//")) path = path.slice(2);
    if (!path) throw invalidRequest("unix: URL without a socket path", { url });
    return { kind: "unix", host: "localhost", port: 0, socketPath: path, url };
  }
  if (url.startsWith("vsock:")) {
    throw invalidRequest("Node.js has no AF_VSOCK sockets; use a TCP or Unix listener", { url });
  }
  const m = /^http:\/\/(\[[^\]]+\]|[^:/]+):(\d+)\/?$/.exec(url);
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) {
    throw invalidRequest("the URL must be http://HOST:PORT or unix:/path", { url });
  }
  const host = m[1]!.startsWith("[") ? m[1]!.slice(1, -1) : m[1]!;
  return { kind: "tcp", host, port: Number(m[2]), url };
}

/**
 * The first `size` bytes of the open regular file `fd` (not closed here),
 * sent with Content-Length, read by position: each attempt sends them from
 * offset 0, so the request can be retried.
 */
export class FileBody {
  constructor(readonly fd: number, readonly size: number, readonly name = "") {}
}

export type Body = Buffer | FileBody | Readable | AsyncIterable<Uint8Array>;

/** A body that cannot be sent twice (a stream or an iterable). */
function isStreamed(body: Body | undefined): boolean {
  return body !== undefined && !Buffer.isBuffer(body) && !(body instanceof FileBody);
}

export interface Request {
  method: string;
  path: string;
  body?: Body;
  headers?: Record<string, string>;
  idempotent?: boolean;
  /** Milliseconds a long poll adds to the request deadline. */
  extraWaitMs?: number;
  /** Socket inactivity limit while the body is read (default the request timeout). */
  idleTimeoutMs?: number;
  /** false: send without first checking the daemon's protocol (the check's own request, health). */
  negotiate?: boolean;
  /** Answer the response whatever its status (the caller reads the body). */
  anyStatus?: boolean;
  /**
   * A non-2xx answer whose status and body this accepts is the call's
   * answer: returned by call(), neither retried nor thrown (health's 503
   * document).
   */
  answerIf?: (status: number, body: Buffer) => boolean;
}

/** A response whose body open() already read (an answer accepted by answerIf). */
type ReadAnswer = http.IncomingMessage & { readBody?: Buffer };

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

const RETRYABLE = new Set([500, 502, 503, 504]);
const MAX_ERROR_BODY = 1 << 20;
/** Bodies above this (and every streamed body) wait for "100 Continue". */
const EXPECT_CONTINUE_BYTES = 1 << 20;
/** How long to wait for "100 Continue" before sending the body anyway. */
const CONTINUE_WAIT_MS = 3000;

export class Transport {
  readonly endpoint: Endpoint;
  token: string | undefined;
  readonly opts: Required<Omit<ClientOptions, "token" | "url">>;
  private readonly agent: http.Agent;
  /** Version negotiation: checked once per client; a refusal is kept (docs/PROTOCOL.md, "Compatibility"). */
  private protocolOk = false;
  private refusal: AgentdError | undefined;
  private negotiating: Promise<void> | undefined;

  constructor(options: ClientOptions = {}) {
    this.endpoint = parseUrl(options.url ?? "http://127.0.0.1:7700");
    this.token = options.token;
    this.opts = {
      connectTimeoutMs: options.connectTimeoutMs ?? 5000,
      requestTimeoutMs: options.requestTimeoutMs ?? 60000,
      maxAttempts: Math.max(1, options.maxAttempts ?? 6),
      backoffInitialMs: options.backoffInitialMs ?? 50,
      backoffMaxMs: options.backoffMaxMs ?? 2000,
      maxStreamReconnects: options.maxStreamReconnects ?? 20,
      maxIdleConnections: options.maxIdleConnections ?? 8,
    };
    this.agent = new http.Agent({ keepAlive: true, maxFreeSockets: this.opts.maxIdleConnections });
  }

  /** Milliseconds before retry `attempt` (1-based): full jitter in [base/2, base]. */
  backoff(attempt: number): number {
    let base = this.opts.backoffInitialMs;
    for (let i = 1; i < attempt && base < this.opts.backoffMaxMs; i++) base *= 2;
    base = Math.min(base, this.opts.backoffMaxMs);
    return base / 2 + Math.random() * (base / 2);
  }

  close(): void {
    this.agent.destroy();
  }

  /**
   * On first use: reads `protocol` from /v1/health and refuses a daemon
   * whose protocol major this client does not speak (protocol_mismatch naming
   * both). A health the daemon cannot answer now (another status, such as
   * a proxy's) leaves the check to the next call; a lost connection is the
   * call's own failure.
   */
  async negotiate(): Promise<void> {
    if (this.refusal) throw this.refusal;
    if (this.protocolOk) return;
    this.negotiating ??= this.readProtocol().finally(() => (this.negotiating = undefined));
    await this.negotiating;
  }

  /** Records what a /v1/health document says (Client.health() passes its answer here). */
  noteHealth(doc: unknown): void {
    const refusal = protocolRefusal(doc, this.endpoint.url);
    if (refusal) this.refusal = refusal;
    else this.protocolOk = true;
  }

  private async readProtocol(): Promise<void> {
    const res = await this.open({ method: "GET", path: "/v1/health", idempotent: true, negotiate: false, anyStatus: true });
    const status = res.statusCode ?? 0;
    const body = await readAll(res, MAX_ERROR_BODY);
    if (status === 404) {
      this.refusal = protocolError(`the daemon at ${this.endpoint.url} has no /v1/health: it does not speak ` +
        `protocol ${PROTOCOL_MAJOR}, the only one this client speaks`, { http_status: status, client_protocol: PROTOCOL_MAJOR });
    } else if (status === 200 || status === 503) { // 503: resetting or quarantined, with the whole health
      let doc: unknown;
      try {
        doc = JSON.parse(body.toString("utf8"));
      } catch {
        doc = undefined;
      }
      if (status === 200 || protocolMajor(doc) !== undefined) this.noteHealth(doc);
    }
    if (this.refusal) throw this.refusal;
  }

  /** Sends `req` (with retries) and answers the 2xx response, body unread. */
  async open(req: Request): Promise<http.IncomingMessage> {
    if (req.negotiate !== false) await this.negotiate();
    const streamed = isStreamed(req.body);
    let last: AgentdError | undefined;
    for (let attempt = 1; attempt <= this.opts.maxAttempts; attempt++) {
      if (attempt > 1) await sleep(this.backoff(attempt - 1));
      const mayRetry = attempt < this.opts.maxAttempts;
      let res: http.IncomingMessage;
      try {
        res = await this.attempt(req);
      } catch (e) {
        if (!(e instanceof Failed)) throw e;
        last = e.error;
        if (mayRetry && (!e.sent || (req.idempotent && !streamed))) continue;
        throw e.error;
      }
      const status = res.statusCode ?? 0;
      if ((status >= 200 && status < 300) || req.anyStatus) return res;
      let body: Buffer = Buffer.alloc(0);
      try {
        body = await readAll(res, MAX_ERROR_BODY);
      } catch {
        // the status is what matters
      }
      if (req.answerIf?.(status, body)) return Object.assign(res, { readBody: body });
      last = errorFromBody(status, body);
      if (mayRetry && req.idempotent && !streamed && RETRYABLE.has(status)) continue;
      throw last;
    }
    throw last ?? transportError("no attempt was made");
  }

  /** Sends `req` and reads the whole 2xx body; a body cut short retries an idempotent call. */
  async call(req: Request, maxBody = 64 << 20): Promise<Answer> {
    for (let attempt = 1; ; attempt++) {
      const res: ReadAnswer = await this.open(req);
      if (res.readBody) return { status: res.statusCode ?? 0, headers: res.headers, body: res.readBody };
      try {
        return { status: res.statusCode ?? 0, headers: res.headers, body: await readAll(res, maxBody) };
      } catch (e) {
        const retry = e instanceof AgentdError &&
          (e.code === "transport_error" || e.code === "deadline_exceeded");
        if (!retry || !req.idempotent || attempt >= this.opts.maxAttempts) throw e;
        await sleep(this.backoff(attempt));
      }
    }
  }

  private baseHeaders(): Record<string, string> {
    const e = this.endpoint;
    return {
      Host: e.kind === "tcp" ? `${e.host.includes(":") ? `[${e.host}]` : e.host}:${e.port}` : "localhost",
      "User-Agent": "agentd-client-ts/1",
      ...(this.token ? { Authorization: `Bearer ${this.token}` } : {}),
    };
  }

  private target(): http.RequestOptions {
    const e = this.endpoint;
    return e.kind === "unix" ? { socketPath: e.socketPath } : { host: e.host, port: e.port };
  }

  /**
   * GET `path` with `Upgrade: tcp` on a connection of its own: the raw
   * socket once the daemon answered 101 (bytes it relayed behind the head
   * are read first), else the daemon's error. Retried only while nothing
   * was sent: a refusal (502 port_unreachable) is the answer.
   */
  async upgrade(path: string): Promise<Socket> {
    await this.negotiate();
    let last: AgentdError | undefined;
    for (let attempt = 1; attempt <= this.opts.maxAttempts; attempt++) {
      if (attempt > 1) await sleep(this.backoff(attempt - 1));
      try {
        return await this.upgradeOnce(path);
      } catch (e) {
        if (!(e instanceof Failed)) throw e;
        last = e.error;
        if (e.sent) throw e.error;
      }
    }
    throw last ?? transportError("no attempt was made");
  }

  private upgradeOnce(path: string): Promise<Socket> {
    const e = this.endpoint;
    return new Promise((resolve, reject) => {
      let sent = false;
      let settled = false;
      const fail = (error: AgentdError) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(new Failed(error, sent));
      };
      const r = http.request({
        agent: false, method: "GET", path, ...this.target(),
        headers: { ...this.baseHeaders(), Connection: "Upgrade", Upgrade: "tcp" },
      });
      const timer = setTimeout(() => {
        fail(deadlineExceeded(`no answer to the tunnel request from ${e.url} within the deadline`));
        r.destroy();
      }, this.opts.connectTimeoutMs + this.opts.requestTimeoutMs);
      r.on("socket", (sock) => {
        if ((sock as { connecting?: boolean }).connecting) sock.once("connect", () => (sent = true));
        else sent = true;
      });
      r.on("error", (err: NodeJS.ErrnoException) => {
        fail(transportError(`${sent ? "connection to" : "cannot connect to"} ${e.url}: ${err.code ?? err.message}`));
      });
      r.on("upgrade", (_res, socket: Socket, head: Buffer) => {
        if (settled) {
          socket.destroy();
          return;
        }
        settled = true;
        clearTimeout(timer);
        socket.allowHalfOpen = true; // the guest's end of output leaves our sending side open
        if (head.length) socket.unshift(head);
        resolve(socket);
      });
      r.on("response", (res) => {
        const status = res.statusCode ?? 0;
        readAll(res, MAX_ERROR_BODY).then(
          (body) => fail(status >= 200 && status < 300
            ? protocolError(`the daemon answered ${status} instead of 101 Switching Protocols`, { http_status: status })
            : errorFromBody(status, body)),
          () => fail(protocolError(`the daemon answered ${status} instead of 101 Switching Protocols`,
            { http_status: status })));
      });
      r.end();
    });
  }

  private attempt(req: Request): Promise<http.IncomingMessage> {
    const e = this.endpoint;
    const headers = this.baseHeaders();
    const streamed = isStreamed(req.body);
    const file = req.body instanceof FileBody ? req.body : undefined;
    if (Buffer.isBuffer(req.body)) headers["Content-Length"] = String(req.body.length);
    else if (file) headers["Content-Length"] = String(file.size);
    else if (!streamed && (req.method === "POST" || req.method === "PUT")) headers["Content-Length"] = "0";
    // A large or streamed body waits for "100 Continue", so a refusal the
    // daemon makes from the head alone (507 for a size beyond free space,
    // 413, 401) arrives before any of it is sent, and is not lost to a
    // connection the daemon closes while the body is still in flight.
    const expect = streamed || (Buffer.isBuffer(req.body) && req.body.length > EXPECT_CONTINUE_BYTES) ||
      (file !== undefined && file.size > EXPECT_CONTINUE_BYTES);
    if (expect) headers.Expect = "100-continue";
    Object.assign(headers, req.headers ?? {});
    const timeout = this.opts.requestTimeoutMs + (req.extraWaitMs ?? 0);
    return new Promise((resolve, reject) => {
      let sent = false;
      let settled = false;
      const fail = (error: AgentdError, wasSent = sent) => {
        if (settled) return;
        settled = true;
        reject(new Failed(error, wasSent));
      };
      const r = http.request({
        agent: this.agent,
        method: req.method,
        path: req.path,
        headers,
        ...this.target(),
      });
      const connectTimer = setTimeout(() => {
        if (!sent) {
          fail(deadlineExceeded(`connect to ${e.url} timed out`), false);
          r.destroy();
        }
      }, this.opts.connectTimeoutMs);
      r.on("socket", (sock) => {
        const connected = () => {
          sent = true;
          clearTimeout(connectTimer);
        };
        if ((sock as { connecting?: boolean }).connecting) sock.once("connect", connected);
        else connected();
      });
      r.setTimeout(timeout, () => {
        fail(deadlineExceeded(`no answer from ${e.url} within ${timeout} ms`));
        r.destroy();
      });
      r.on("error", (err: NodeJS.ErrnoException) => {
        clearTimeout(connectTimer);
        if (err instanceof SourceFailed) {
          if (!settled) {
            settled = true;
            reject(err.cause);
          }
          return;
        }
        const what = sent ? "connection to %s lost" : "cannot connect to %s";
        fail(transportError(`${what.replace("%s", e.url)}: ${err.code ?? err.message}`));
      });
      let bodyStarted = false;
      let continueTimer: NodeJS.Timeout | undefined;
      r.on("response", (res) => {
        clearTimeout(connectTimer);
        clearTimeout(continueTimer);
        if (!bodyStarted) {
          // Answered from the head alone: the body is never sent, and the
          // connection is not reused.
          bodyStarted = true;
          res.once("end", () => r.destroy());
        }
        if (settled) {
          res.destroy();
          return;
        }
        settled = true;
        r.setTimeout(req.idleTimeoutMs ?? timeout, () => {
          r.destroy(deadlineExceeded(`no answer bytes from ${e.url} within the deadline`));
        });
        resolve(res);
      });
      const sendBody = () => {
        if (bodyStarted) return;
        bodyStarted = true;
        clearTimeout(continueTimer);
        if (streamed) void pump(r, req.body as AsyncIterable<Uint8Array>);
        else if (file) void pump(r, fileBlocks(file));
        else r.end(req.body as Buffer | undefined);
      };
      if (!expect) {
        sendBody();
        return;
      }
      r.flushHeaders();
      r.once("continue", sendBody);
      continueTimer = setTimeout(sendBody, CONTINUE_WAIT_MS); // a server that ignores Expect
    });
  }
}

async function pump(r: http.ClientRequest, body: AsyncIterable<Uint8Array>): Promise<void> {
  try {
    for await (const chunk of body) {
      if (chunk.length && !r.write(chunk)) await onceDrainOrClose(r);
      if (r.destroyed) return;
    }
    r.end();
  } catch (err) {
    // The body's source failed: never send the final chunk, so the daemon
    // sees a cut request and keeps nothing of it.
    r.destroy(new SourceFailed(err));
  }
}

const FILE_BLOCK_BYTES = 1 << 20;

/** file.size bytes of file.fd from offset 0; a file that ends sooner is an io_error naming it. */
async function* fileBlocks(file: FileBody): AsyncGenerator<Uint8Array> {
  let offset = 0;
  while (offset < file.size) {
    const buf = Buffer.allocUnsafe(Math.min(FILE_BLOCK_BYTES, file.size - offset));
    const what = file.name || `fd ${file.fd}`;
    const n = await new Promise<number>((resolve, reject) =>
      fsRead(file.fd, buf, 0, buf.length, offset, (err, got) => (err
        ? reject(makeError("io_error", `cannot read ${what}: ${err.code ?? err.message}`, 0, { path: file.name }))
        : resolve(got))));
    if (n === 0) {
      throw makeError("io_error", `${what} ended at ${offset} bytes of the ${file.size} to send`, 0,
        { path: file.name });
    }
    offset += n;
    yield buf.subarray(0, n);
  }
}

function onceDrainOrClose(r: http.ClientRequest): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      r.off("drain", done);
      r.off("close", done);
      resolve();
    };
    r.on("drain", done);
    r.on("close", done);
  });
}

class Failed extends Error {
  constructor(readonly error: AgentdError, readonly sent: boolean) {
    super(error.message);
  }
}

class SourceFailed extends Error {
  constructor(override readonly cause: unknown) {
    super(String(cause));
  }
}

/** The whole body; a connection cut before its end is a transport_error. */
export async function readAll(res: http.IncomingMessage, limit: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let total = 0;
  for await (const chunk of bodyChunks(res)) {
    total += chunk.length;
    if (total > limit) {
      res.destroy();
      throw protocolError(`the answer is larger than ${limit} bytes`, { limit });
    }
    parts.push(chunk);
  }
  return Buffer.concat(parts);
}

/** The body's chunks; ends only at the body's real end, else throws transport_error. */
export async function* bodyChunks(res: http.IncomingMessage): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of res) yield chunk as Buffer;
  } catch (err) {
    if (err instanceof AgentdError) throw err;
    throw transportError(`the answer was cut short: ${(err as Error).message}`);
  }
  if (!res.complete) throw transportError("the answer was cut short");
}
