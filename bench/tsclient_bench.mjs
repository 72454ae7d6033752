// TypeScript client overhead (issue 25), driven by bench/tsclient_bench.py:
// @agentd/client beside the same requests made by hand with node:http on
// one keep-alive connection, interleaved in one process. Prints one JSON
// document.
//   node tsclient_bench.mjs CLIENT_INDEX_JS URL TOKEN RUNS BLOCK STREAM_BYTES STREAM_ROUNDS
import * as http from "node:http";

const [indexJs, url, token, runsArg, blockArg, sizeArg, roundsArg] = process.argv.slice(2);
const { Client, mintExecId } = await import(indexJs);
const runs = Number(runsArg), block = Number(blockArg), size = Number(sizeArg), rounds = Number(roundsArg);
const { hostname, port } = new URL(url);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const WAIT_MS = 30000;

/** One request by hand: the whole body, JSON-decoded. */
function call(method, path, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: hostname, port, method, path, agent, headers: {
      Authorization: `Bearer ${token}`, "Content-Type": "application/json",
      ...(body ? { "Content-Length": Buffer.byteLength(body) } : {}),
    } }, (res) => {
      const parts = [];
      res.on("data", (d) => parts.push(d));
      res.on("end", () => {
        const doc = JSON.parse(Buffer.concat(parts).toString("utf8"));
        if (res.statusCode < 200 || res.statusCode > 299) reject(new Error(`${method} ${path}: ${res.statusCode}`));
        else resolve(doc);
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** The fewest requests that give a command's exit and output and mark it read. */
async function rawRunTrue(id) {
  const doc = await call("PUT", `/v1/execs/${id}?stdout_from=0&stderr_from=0&wait_ms=${WAIT_MS}&until=exit`,
    '{"argv": ["true"]}');
  if (doc.state !== "exited") throw new Error(`not exited: ${JSON.stringify(doc)}`);
  await call("POST", `/v1/execs/${id}/ack`, "{}");
}

/** The raw route (or the events route, undecoded) read to its end, counting bytes. */
function rawRead(id, route = "stdout") {
  return new Promise((resolve, reject) => {
    http.get({ host: hostname, port, path: `/v1/execs/${id}/${route}`, agent,
      headers: { Authorization: `Bearer ${token}` } }, (res) => {
      let n = 0;
      res.on("data", (d) => (n += d.length));
      res.on("end", () => resolve(n));
      res.on("error", reject);
    }).on("error", reject);
  });
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const p99 = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(s.length * 0.99))]; };

const c = new Client({ url, token });
for (let i = 0; i < 20; i++) { // warm-up: connections, the protocol check, the JIT
  await c.run(["true"]);
  await rawRunTrue(`warm-${i}`);
}
const clientMs = [], rawMs = [];
let n = 0;
while (clientMs.length < runs) {
  for (let i = 0; i < block; i++) {
    const t0 = performance.now();
    const r = await c.run(["true"]);
    clientMs.push(performance.now() - t0);
    if (r.exitCode !== 0 || !r.exec.acked) throw new Error(`run: ${JSON.stringify(r)}`);
  }
  for (let i = 0; i < block; i++) {
    const t0 = performance.now();
    await rawRunTrue(`raw-${++n}`);
    rawMs.push(performance.now() - t0);
  }
}

// One exec's retained stdout, read both ways once it has exited.
const id = mintExecId("big");
await c.startExec(id, { argv: ["head", "-c", String(size), "/dev/zero"] });
const info = await c.waitExec(id, 600000);
if (info.exitCode !== 0 || info.stdoutBytes !== size) throw new Error(`big: ${JSON.stringify(info)}`);
const streamRounds = [];
for (let r = 0; r < rounds; r++) {
  // The event stream read without decoding: what the daemon's SSE route
  // delivers, a bound on any client of it (in output bytes per second).
  let t0 = performance.now();
  await rawRead(id, "events");
  const sseS = (performance.now() - t0) / 1e3;
  t0 = performance.now();
  const raw = await rawRead(id);
  const rawS = (performance.now() - t0) / 1e3;
  t0 = performance.now();
  let got = 0;
  for await (const ev of c.stream(id)) if (ev.kind === "stdout") got += ev.data.length;
  const clientS = (performance.now() - t0) / 1e3;
  if (raw !== size || got !== size) throw new Error(`read ${raw} raw, ${got} through the client; want ${size}`);
  streamRounds.push({ client_mib_s: size / clientS / 2 ** 20, raw_mib_s: size / rawS / 2 ** 20,
    sse_undecoded_mib_s: size / sseS / 2 ** 20 });
}
c.close();
agent.destroy();

process.stdout.write(JSON.stringify({
  run_p50_ms: median(clientMs), run_p99_ms: p99(clientMs), raw_p50_ms: median(rawMs), raw_p99_ms: p99(rawMs),
  run_ratio_p50: median(clientMs) / median(rawMs), runs: clientMs.length,
  stream_bytes: size,
  stream_client_mib_s: median(streamRounds.map((x) => x.client_mib_s)),
  stream_raw_mib_s: median(streamRounds.map((x) => x.raw_mib_s)),
  stream_ratio: median(streamRounds.map((x) => x.client_mib_s / x.raw_mib_s)),
  sse_undecoded_mib_s: median(streamRounds.map((x) => x.sse_undecoded_mib_s)),
  stream_rounds: streamRounds, node: process.versions.node,
}) + "\n");
