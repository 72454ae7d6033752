// Drives `agentctl mcp` with the official MCP TypeScript SDK client and
// prints one JSON object of what it saw, for tests/test_agentctl_mcp.py to
// check against the daemon's state.
//
//   node client.mjs SCENARIO
// env: MCP_AGENTCTL (the binary), MCP_ARGS (JSON array of extra agentctl
// arguments), MCP_WORK (a guest directory to work in), MCP_EXEC_ID (the
// cancel scenario's exec id), MCP_URL (Streamable HTTP to a server already
// listening, instead of stdio); the daemon's URL and token file come
// through AGENTD_URL and AGENTD_TOKEN_FILE.
import { existsSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import Ajv from "ajv";

const scenario = process.argv[2];
const work = process.env.MCP_WORK;

async function connect() {
  const client = new Client({ name: "agentd-mcp-test", version: "1.0.0" });
  if (process.env.MCP_URL) {
    // Streamable HTTP to a running `agentctl mcp --listen`.
    await client.connect(new StreamableHTTPClientTransport(new URL(process.env.MCP_URL)));
    return client;
  }
  const transport = new StdioClientTransport({
    command: process.env.MCP_AGENTCTL,
    args: ["mcp", ...JSON.parse(process.env.MCP_ARGS || "[]")],
    env: process.env,
    stderr: "inherit",
  });
  await client.connect(transport);
  return client;
}

const call = (client, name, args, options) =>
  client.callTool({ name, arguments: args }, CallToolResultSchema, options);

// Waits for a file the guest command creates: bounded by the test's own
// timeout, not by a clock of ours.
async function untilExists(path) {
  while (!existsSync(path)) await new Promise((r) => setTimeout(r, 20));
}

async function tools(client) {
  const out = {};
  const listed = await client.listTools();
  const ajv = new Ajv({ strict: false });
  out.tools = listed.tools.map((t) => {
    let schemaOk = false;
    try {
      ajv.compile(t.inputSchema);
      schemaOk = t.inputSchema.type === "object";
    } catch (e) {
      schemaOk = String(e);
    }
    return { name: t.name, description: t.description, schemaOk, annotations: t.annotations };
  });
  out.serverVersion = client.getServerVersion();
  out.write = await call(client, "write_file", { path: `${work}/a.txt`, content: "one\ntwo\nthree\n" });
  out.read = await call(client, "read_file", { path: `${work}/a.txt`, start_line: 2, end_line: 3 });
  out.stat = await call(client, "stat", { path: `${work}/a.txt` });
  out.missing = await call(client, "stat", { path: `${work}/no-such-file` });
  out.list = await call(client, "list_dir", { path: work });
  out.glob = await call(client, "glob", { pattern: "*.txt", path: work });
  out.search = await call(client, "search", { pattern: "tw", path: work });
  out.edit = await call(client, "edit_file", {
    path: `${work}/a.txt`,
    edits: [{ old: "two", new: "TWO" }],
  });
  out.mismatch = await call(client, "edit_file", {
    path: `${work}/a.txt`,
    edits: [{ old: "three", new: "3", count: 2 }],
  });
  out.exec = await call(client, "exec", { command: "echo hi; echo err >&2; exit 3", cwd: work });
  const retry = { command: `echo run >> ${work}/runs; echo ran`, id: "mcp-retry-" + process.pid };
  out.retry1 = await call(client, "exec", retry);
  out.retry2 = await call(client, "exec", retry);
  out.run = await call(client, "run_code", { code: "echo made > made.txt; echo done", cwd: work });
  const progress = [];
  out.progressExec = await call(
    client,
    "exec",
    { command: "for i in 1 2 3 4 5 6; do echo line $i; sleep 0.3; done" },
    { onprogress: (p) => progress.push(p) },
  );
  out.progress = progress;
  return out;
}

async function cancel(client) {
  const id = process.env.MCP_EXEC_ID;
  const controller = new AbortController();
  const pending = call(
    client,
    "exec",
    { command: `echo $$ > ${work}/started; exec sleep 300`, id },
    { signal: controller.signal },
  );
  await untilExists(`${work}/started`);
  controller.abort("test cancels");
  let outcome;
  try {
    await pending;
    outcome = "answered";
  } catch (e) {
    outcome = "aborted: " + String(e);
  }
  // The session goes on after a cancellation.
  const after = await call(client, "exec", { command: "echo still here" });
  return { outcome, after };
}

async function cancelRun(client) {
  const controller = new AbortController();
  const pending = call(
    client,
    "run_code",
    { code: `echo $$ > ${work}/run-started; exec sleep 300`, cwd: work },
    { signal: controller.signal },
  );
  await untilExists(`${work}/run-started`);
  controller.abort("test cancels");
  let outcome;
  try {
    await pending;
    outcome = "answered";
  } catch (e) {
    outcome = "aborted: " + String(e);
  }
  const after = await call(client, "exec", { command: "echo still here" });
  return { outcome, after };
}

async function cut(client) {
  return {
    exec: await call(client, "exec", { command: "seq 1 100000" }),
    read: await call(client, "read_file", { path: `${work}/big.txt` }),
    list: await call(client, "list_dir", { path: `${work}/many` }),
  };
}

const scenarios = { tools, cancel, cancelRun, cut };
const client = await connect();
const result = await scenarios[scenario](client);
await client.close();
process.stdout.write(JSON.stringify(result) + "\n");
