// Test support: the real agentd binary ($AGENTD_BIN) on an ephemeral port
// with a private state directory, and a TCP proxy that cuts connections.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

import { AgentdError, Client } from "../src/index.js";

export const TOKEN = "test-token";

/** The AgentdError `p` rejects with; fails the test when it resolves or throws anything else. */
export async function rejection(p: Promise<unknown>): Promise<AgentdError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof AgentdError, String(e));
    return e;
  }
  assert.fail("expected an AgentdError");
}

export class Daemon {
  readonly dir: string;
  private proc?: ChildProcess;
  port = 0;

  private constructor() {
    this.dir = mkdtempSync(join(tmpdir(), "agentd-ts-"));
  }

  static async start(...flags: string[]): Promise<Daemon> {
    return Daemon.startUnder([], ...flags);
  }

  /** Runs the daemon under `wrapper` (a program that execs its arguments). */
  static async startUnder(wrapper: string[], ...flags: string[]): Promise<Daemon> {
    const d = new Daemon();
    const bin = process.env.AGENTD_BIN;
    if (!bin) throw new Error("set AGENTD_BIN to the agentd binary");
    const args = [bin, "--state-dir", join(d.dir, "state"), "--listen", "127.0.0.1:0", ...flags];
    const proc = spawn(wrapper[0] ?? bin, [...wrapper.slice(1), ...(wrapper.length ? args : args.slice(1))],
      { stdio: ["ignore", "ignore", "pipe"] });
    d.proc = proc;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("agentd did not become ready")), 10000);
      proc.once("exit", (code) => reject(new Error(`agentd exited with ${code}`)));
      createInterface({ input: proc.stderr! }).on("line", (line) => {
        let entry: { msg?: string; port?: number };
        try {
          entry = JSON.parse(line);
        } catch {
          return;
        }
        if (entry.msg === "listening" && entry.port && !d.port) d.port = entry.port;
        if (entry.msg === "ready") {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    return d;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async client(options: ConstructorParameters<typeof Client>[0] = {}): Promise<Client> {
    const c = new Client({ url: this.url, ...options });
    if (!options.token) await c.bootstrap(TOKEN);
    return c;
  }

  async stop(): Promise<void> {
    const proc = this.proc;
    if (proc && proc.exitCode === null) {
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGTERM");
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Relays to `port`; cuts each connection after budget() daemon-to-client bytes. */
export class CuttingProxy {
  readonly server: net.Server;
  cuts = 0;
  connections = 0;

  constructor(port: number, budget: () => number | undefined) {
    this.server = net.createServer((client) => {
      this.connections++;
      const upstream = net.connect(port, "127.0.0.1");
      let left = budget();
      const cut = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on("error", cut);
      upstream.on("error", cut);
      client.on("data", (d) => upstream.write(d));
      upstream.on("data", (d: Buffer) => {
        if (left !== undefined && d.length >= left) {
          client.write(d.subarray(0, left));
          this.cuts++;
          cut();
          return;
        }
        if (left !== undefined) left -= d.length;
        client.write(d);
      });
      client.on("end", () => upstream.end());
      upstream.on("end", () => client.end());
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    return `http://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  close(): void {
    this.server.close();
  }
}

/** Relays to `port`; stops reading from the client after `budget` client-to-daemon bytes until resume(). */
export class StallingProxy {
  readonly server: net.Server;
  readonly stalled: Promise<void>;
  private onStall!: () => void;
  private paused: net.Socket[] = [];

  constructor(port: number, budget: number) {
    this.stalled = new Promise((r) => (this.onStall = r));
    this.server = net.createServer((client) => {
      const upstream = net.connect(port, "127.0.0.1");
      let left = budget;
      const cut = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on("error", cut);
      upstream.on("error", cut);
      client.on("data", (d: Buffer) => {
        upstream.write(d);
        left -= d.length;
        if (left <= 0 && !this.paused.includes(client)) {
          client.pause();
          this.paused.push(client);
          this.onStall();
        }
      });
      upstream.on("data", (d) => client.write(d));
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    return `http://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  resume(): void {
    for (const s of this.paused) s.resume();
  }

  close(): void {
    this.server.close();
  }
}
