// Version negotiation against a fake daemon (node:http) whose /v1/health
// reports another protocol: a daemon of another major is refused on first
// use with both versions named, before any other request reaches it; a
// newer minor with fields and routes this client does not know works.
import assert from "node:assert/strict";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";

import { AgentdError, Client, PROTOCOL_MAJOR, ProtocolError, ProtocolMismatch } from "../src/index.js";
import { rejection } from "./helpers.js";

interface Fake {
  url: string;
  /** The request targets the fake received, in order. */
  seen: string[];
  close(): Promise<void>;
}

/** Answers /v1/health with `health` (or `healthStatus` and a non-JSON body) and GET /v1/execs with no execs. */
async function fakeDaemon(health: Record<string, unknown> | undefined, healthStatus = 200): Promise<Fake> {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    const json = (status: number, doc: unknown) => {
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(JSON.stringify(doc));
    };
    if (req.url === "/v1/health") {
      if (health) json(healthStatus, health);
      else json(healthStatus, { error: { code: "route_not_found", message: "no such route" } });
    } else if (req.url === "/v1/execs") {
      json(200, { execs: [], added_in_a_newer_minor: true });
    } else {
      json(404, { error: { code: "route_not_found", message: "no such route" } });
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

const health = (protocol: unknown, version: string) => ({
  status: "ok", version, protocol, bootstrapped: true, busy: false, execs: 0, uptime_ms: 1, runtimes: [],
});

test("a daemon of another protocol major is refused on first use, naming both versions", async () => {
  const fake = await fakeDaemon({ ...health(2, "2.0.0"), shiny_new_field: 1 });
  const c = new Client({ url: fake.url, token: "t" });
  try {
    const e = await rejection(c.listExecs());
    // The same class and code as the C++ and Python clients (docs/CLIENT.md, "Error classes").
    assert.ok(e instanceof ProtocolMismatch, `${e.name} is a ProtocolMismatch`);
    assert.ok(e instanceof AgentdError && !(e instanceof ProtocolError));
    assert.equal(e.name, "ProtocolMismatch");
    assert.equal(e.code, "protocol_mismatch");
    assert.equal(e.status, 0);
    assert.equal(e.message,
      `the daemon at ${fake.url} speaks protocol 2 (agentd 2.0.0); this client speaks protocol 1`);
    assert.deepEqual(e.details, { daemon_protocol: 2, daemon_version: "2.0.0", client_protocol: PROTOCOL_MAJOR });
    // Kept: later calls, tunnels included, are refused without asking again.
    assert.equal((await rejection(c.stat("/"))).code, "protocol_mismatch");
    assert.equal((await rejection(c.openTunnel(80))).code, "protocol_mismatch");
    assert.deepEqual(fake.seen, ["GET /v1/health"], "nothing but the health check reached the daemon");
    // health() itself answers, so a caller can see what the daemon speaks.
    assert.equal((await c.health()).protocol, 2);
  } finally {
    c.close();
    await fake.close();
  }
});

test("health() first records the protocol: the next call is refused without another check", async () => {
  const fake = await fakeDaemon(health(0, "0.0.1"));
  const c = new Client({ url: fake.url, token: "t" });
  try {
    assert.equal((await c.health()).protocol, 0);
    const e = await rejection(c.listExecs());
    assert.ok(e instanceof ProtocolMismatch);
    assert.match(e.message, /speaks protocol 0 .*this client speaks protocol 1/);
    assert.deepEqual(fake.seen, ["GET /v1/health"]);
  } finally {
    c.close();
    await fake.close();
  }
});

test("a newer minor of protocol 1 keeps working, checked once", async () => {
  for (const protocol of [1, "1.4"]) {
    const fake = await fakeDaemon({ ...health(protocol, "1.9.0"), a_field_from_the_future: { x: 1 } });
    const c = new Client({ url: fake.url, token: "t" });
    try {
      assert.deepEqual(await c.listExecs(), []);
      assert.deepEqual(await c.listExecs(), []);
      assert.deepEqual(fake.seen, ["GET /v1/health", "GET /v1/execs", "GET /v1/execs"], String(protocol));
    } finally {
      c.close();
      await fake.close();
    }
  }
});

test("a server without /v1/health or without a protocol is refused", async () => {
  const noRoute = await fakeDaemon(undefined, 404);
  const c = new Client({ url: noRoute.url, token: "t" });
  try {
    // Not a daemon of another protocol but not one of this protocol either: protocol_error.
    const e = await rejection(c.listExecs());
    assert.equal(e.code, "protocol_error");
    assert.ok(e instanceof ProtocolError);
    assert.match(e.message, /has no \/v1\/health/);
  } finally {
    c.close();
    await noRoute.close();
  }
  const noProtocol = await fakeDaemon({ status: "ok", version: "9" });
  const d = new Client({ url: noProtocol.url, token: "t" });
  try {
    assert.match((await rejection(d.listExecs())).message, /without a protocol version/);
  } finally {
    d.close();
    await noProtocol.close();
  }
});

test("a health the daemon cannot answer now leaves the check to the next call", async () => {
  // 503 without a health document (a proxy in front of a restarting daemon).
  const fake = await fakeDaemon(undefined, 503);
  const c = new Client({ url: fake.url, token: "t", maxAttempts: 1 });
  try {
    assert.deepEqual(await c.listExecs(), []);
    assert.deepEqual(await c.listExecs(), []);
    assert.deepEqual(fake.seen, ["GET /v1/health", "GET /v1/execs", "GET /v1/health", "GET /v1/execs"]);
  } finally {
    c.close();
    await fake.close();
  }
});

test("a 503 health carrying the daemon's document is that answer, at once, with its reason", async () => {
  const doc = { ...health(1, "0.1.0"), status: "draining", reason: "the daemon is stopping (SIGTERM)" };
  const fake = await fakeDaemon(doc, 503);
  const c = new Client({ url: fake.url, token: "t" });
  try {
    const h = await c.health();
    assert.equal(h.status, "draining");
    assert.equal(h.reason, "the daemon is stopping (SIGTERM)");
    assert.deepEqual(fake.seen, ["GET /v1/health"], "answered once, not retried");
  } finally {
    c.close();
    await fake.close();
  }
});

test("a 503 health without the daemon's document still throws, after the retries", async () => {
  for (const doc of [{ message: "no healthy upstream" }, { ...health(1, "0.1.0"), status: "draining" }]) {
    const fake = await fakeDaemon(doc, 503);
    const c = new Client({ url: fake.url, token: "t", maxAttempts: 2, backoffInitialMs: 5 });
    try {
      const e = await rejection(c.health());
      assert.equal(e.code, "protocol_error");
      assert.equal(e.details.http_status, 503);
      assert.equal(fake.seen.length, 2, "a 503 that is not a health document is retried as before");
    } finally {
      c.close();
      await fake.close();
    }
  }
});
