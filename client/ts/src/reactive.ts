// Watch, ports, tunnels and metrics (docs/PROTOCOL.md, "Watch", "Ports",
// "Metrics"; docs/CLIENT.md, "Watch" and "Tunnels"): the calls that follow
// the guest as it changes, and reach into it.
import * as net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

import { AgentdError, invalidRequest, isRetryable, protocolError, transportError } from "./errors.js";
import { SearchCalls } from "./search.js";
import { SseDecoder, type SseEvent } from "./sse.js";
import { bodyChunks } from "./transport.js";

const q = encodeURIComponent;
/** The daemon sends a keepalive at least every 15 s; longer silence means a dead stream. */
const WATCH_SILENCE_MS = 45000;
/** The Prometheus text of a daemon is a few KiB; far beyond this is not a daemon. */
const MAX_METRICS_BYTES = 4 << 20;

/** One change under a watched directory (docs/PROTOCOL.md, "Watch"). */
export interface FsWatchEvent {
  kind: "created" | "modified" | "removed" | "renamed" | "overflow";
  /** The guest path; "" for overflow. */
  path: string;
  /** "dir" or "file"; "" for overflow. */
  type: string;
  /** renamed: the old path, else "". */
  from: string;
  /** overflow: "kernel_queue", "directory_limit" or "reconnected", else "". */
  reason: string;
  /** Increases by one per event within one watch stream (0 for "reconnected"). */
  id: number;
}

export interface WatchOptions {
  recursive?: boolean;
  /** Runs once the daemon placed the watch (changes after it are reported), and after each reconnect. */
  onReady?: () => void;
  signal?: AbortSignal;
}

/** A listening TCP port in the guest (GET /v1/ports). */
export interface GuestPort {
  port: number;
  /** "127.0.0.1", "0.0.0.0", "::", ... */
  address: string;
  family: "ipv4" | "ipv6";
}

/**
 * A raw byte stream to a TCP port in the guest: a node:net Socket (a
 * Duplex; `end()` half-closes, so the guest reads end of input while its
 * answer still arrives).
 */
export type Tunnel = net.Socket;

/** A local listener whose every connection is tunnelled to one guest port. */
export interface Forward {
  /** The local port (the one asked for, or the one the system chose for 0). */
  port: number;
  server: net.Server;
  /** Stops listening and ends every open tunnel. */
  close(): Promise<void>;
}

export interface ForwardOptions {
  /** Local port; 0 (default) lets the system choose. */
  localPort?: number;
  /** Local address to listen on (default 127.0.0.1). */
  host?: string;
  /** Told about a connection that could not be tunnelled (it is closed). */
  onError?: (e: AgentdError) => void;
}

function checkPort(port: number): number {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw invalidRequest("port must be from 1 to 65535", { field: "port", port });
  }
  return port;
}

function decodeWatchEvent(ev: SseEvent): FsWatchEvent | undefined {
  const kinds = ["created", "modified", "removed", "renamed", "overflow"];
  if (!kinds.includes(ev.event)) return undefined; // a kind this client does not know
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(ev.data) as Record<string, unknown>;
  } catch {
    throw protocolError("watch event data is not JSON");
  }
  if (typeof doc !== "object" || doc === null) throw protocolError("watch event data is not a JSON object");
  const text = (v: unknown) => (typeof v === "string" ? v : "");
  const out: FsWatchEvent = {
    kind: ev.event as FsWatchEvent["kind"], path: text(doc.path), type: text(doc.type), from: text(doc.from),
    reason: text(doc.reason), id: /^\d{1,15}$/.test(ev.id ?? "") ? Number(ev.id) : 0,
  };
  if (out.kind !== "overflow" && !out.path) throw protocolError("watch event without a path");
  return out;
}

export class ReactiveCalls extends SearchCalls {
  /**
   * GET /v1/fs/watch as an async iterator: each change under `path` in
   * order, until the caller stops iterating or the watched directory goes
   * away (its `removed` is the last event). Events cannot be replayed: after
   * a lost connection a new watch is placed and an `overflow` event with
   * reason "reconnected" comes first, so the caller rescans.
   */
  async *watch(path: string, o: WatchOptions = {}): AsyncGenerator<FsWatchEvent> {
    const target = `/v1/fs/watch?path=${q(path)}&recursive=${o.recursive ? 1 : 0}`;
    let watchedBefore = false;
    let quiet = 0;
    for (;;) {
      let failure: AgentdError;
      try {
        const res = await this.t.open({
          method: "GET", path: target, idempotent: true, headers: { Accept: "text/event-stream" },
          idleTimeoutMs: WATCH_SILENCE_MS,
        });
        const abort = () => res.destroy();
        o.signal?.addEventListener("abort", abort);
        try {
          if (watchedBefore) yield { kind: "overflow", path: "", type: "", from: "", reason: "reconnected", id: 0 };
          watchedBefore = true;
          o.onReady?.();
          const decoder = new SseDecoder();
          for await (const chunk of bodyChunks(res)) {
            for (const ev of decoder.feed(chunk)) {
              const out = decodeWatchEvent(ev);
              if (!out) continue;
              quiet = 0;
              yield out;
            }
          }
          return; // the terminating chunk: the watched directory went away
        } finally {
          o.signal?.removeEventListener("abort", abort);
          res.destroy(); // mid-stream: never reused
        }
      } catch (e) {
        if (o.signal?.aborted) throw e;
        if (!isRetryable(e)) throw e;
        failure = e as AgentdError;
      }
      if (++quiet > this.t.opts.maxStreamReconnects) throw failure;
      await sleep(this.t.backoff(quiet));
    }
  }

  /** GET /v1/ports: the TCP ports listening in the guest, sorted by port. */
  async listPorts(): Promise<GuestPort[]> {
    const doc = await this.json<{ ports?: unknown }>("GET", "/v1/ports", undefined, true);
    if (!Array.isArray(doc.ports)) throw protocolError('the port list is not {"ports": [...]}');
    return doc.ports.map((p: Record<string, unknown>) => {
      if (typeof p?.port !== "number" || !Number.isInteger(p.port) || p.port < 1 || p.port > 65535) {
        throw protocolError('a port entry lacks a valid "port"');
      }
      return {
        port: p.port, address: typeof p.address === "string" ? p.address : "",
        family: p.family === "ipv6" ? "ipv6" : "ipv4",
      };
    });
  }

  /**
   * GET /v1/ports/{port}/connect upgraded to a raw byte tunnel to
   * 127.0.0.1:port in the guest. A closed guest port is port_unreachable
   * (502) before anything is relayed.
   */
  openTunnel(port: number): Promise<Tunnel> {
    return this.t.upgrade(`/v1/ports/${checkPort(port)}/connect`);
  }

  /**
   * Listens on a local port and relays every accepted connection through
   * its own tunnel to `guestPort` (what `agentctl forward` does), half-closes
   * passed on in both directions.
   */
  async forward(guestPort: number, o: ForwardOptions = {}): Promise<Forward> {
    checkPort(guestPort);
    const open = new Set<net.Socket>();
    const server = net.createServer({ allowHalfOpen: true }, (local) => {
      open.add(local);
      local.pause(); // hold what the local side sends until the tunnel is up
      local.on("error", () => local.destroy());
      local.on("close", () => open.delete(local));
      this.openTunnel(guestPort).then((tunnel) => {
        if (local.destroyed) {
          tunnel.destroy();
          return;
        }
        open.add(tunnel);
        tunnel.on("close", () => {
          open.delete(tunnel);
          local.destroy();
        });
        tunnel.on("error", () => local.destroy());
        local.on("close", () => tunnel.destroy());
        local.pipe(tunnel); // end() of one half-closes the other
        tunnel.pipe(local);
        local.resume();
      }, (e: unknown) => {
        o.onError?.(e instanceof AgentdError ? e : transportError(String(e)));
        local.destroy();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(o.localPort ?? 0, o.host ?? "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
    return {
      port: (server.address() as net.AddressInfo).port,
      server,
      close: () => new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
    };
  }

  /** GET /v1/metrics: the daemon's Prometheus text exposition (docs/PROTOCOL.md, "Metrics"). */
  async metrics(): Promise<string> {
    const a = await this.t.call({ method: "GET", path: "/v1/metrics", idempotent: true }, MAX_METRICS_BYTES);
    return a.body.toString("utf8");
  }
}
