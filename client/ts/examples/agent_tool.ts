// An agent-tool sandbox: the tools an agent framework hands a model
// (execute code, run a shell command, read and write files), backed by one
// guest through @agentd/client. Every answer is text for the model, bounded
// in size; a failure is an answer the model can act on ("error not_found:
// ..."), never an exception that ends the episode.
//
//   node agent_tool.js URL TOKEN WORKDIR < calls.jsonl
//
// reads one tool call per line ({"name": ..., "input": {...}}) and prints one
// answer per line ({"name": ..., "output": "..."}), as an agent loop would.
// In a harness: `import { Client } from "@agentd/client"`.
import { posix } from "node:path";
import { createInterface } from "node:readline";

import { AgentdError, Client } from "../src/index.js";

/** The most text one answer hands the model. */
const MAX_ANSWER_CHARS = 16000;

/** Tool definitions in the JSON Schema form agent frameworks take. */
export const TOOLS = [
  {
    name: "execute_code",
    description: "Run a Python or shell program in the sandbox's working directory; " +
      "answers a one-line summary, the output and the files it changed.",
    input_schema: {
      type: "object", required: ["language", "code"],
      properties: { language: { enum: ["python", "shell"] }, code: { type: "string" } },
    },
  },
  {
    name: "shell",
    description: "Run a shell command line in the working directory (2 minute limit).",
    input_schema: { type: "object", required: ["command"], properties: { command: { type: "string" } } },
  },
  {
    name: "read_file",
    description: "Read a file, or lines start_line..end_line of it (1-based, inclusive).",
    input_schema: {
      type: "object", required: ["path"],
      properties: { path: { type: "string" }, start_line: { type: "integer" }, end_line: { type: "integer" } },
    },
  },
  {
    name: "write_file",
    description: "Create or replace a file (parent directories are created).",
    input_schema: {
      type: "object", required: ["path", "content"],
      properties: { path: { type: "string" }, content: { type: "string" } },
    },
  },
] as const;

export interface ToolCall {
  name: string;
  input: Record<string, unknown>;
}

function bounded(text: string): string {
  if (text.length <= MAX_ANSWER_CHARS) return text;
  const head = text.slice(0, MAX_ANSWER_CHARS / 4);
  const tail = text.slice(text.length - (MAX_ANSWER_CHARS * 3) / 4);
  return `${head}\n[... ${text.length - head.length - tail.length} characters omitted ...]\n${tail}`;
}

export class SandboxTools {
  constructor(private readonly guest: Client, private readonly workdir: string) {}

  /** Answers one tool call with text for the model. */
  async call(call: ToolCall): Promise<string> {
    try {
      return bounded(await this.dispatch(call));
    } catch (e) {
      if (e instanceof AgentdError) return `error ${e.code}: ${e.message}`;
      throw e; // a defect of the harness, not of the model's call
    }
  }

  private async dispatch({ name, input }: ToolCall): Promise<string> {
    switch (name) {
      case "execute_code": {
        const runtime = input.language === "python" ? "python" : "shell";
        const r = await this.guest.runCode(runtime, String(input.code), { cwd: this.workdir, timeoutSec: 60 });
        const changed = r.changedFiles.map((f) => `${f.change} ${f.path}`).join("\n");
        return [r.summary, r.stdout, r.stderr && `stderr:\n${r.stderr}`, changed && `changed:\n${changed}`]
          .filter(Boolean).join("\n");
      }
      case "shell": {
        const r = await this.guest.run(String(input.command), { cwd: this.workdir, timeoutSec: 120,
          maxStdoutBytes: MAX_ANSWER_CHARS, maxStderrBytes: MAX_ANSWER_CHARS });
        const why = r.timedOut ? " (timed out)" : r.signal ? ` (signal ${r.signal})` : "";
        return `exit ${r.exitCode}${why}\n${r.stdout.toString()}${r.stderr.length ? `stderr:\n${r.stderr}` : ""}`;
      }
      case "read_file": {
        const lines = { startLine: input.start_line as number | undefined, endLine: input.end_line as number | undefined };
        return (await this.guest.readFile(this.path(input.path), { ...lines, maxBytes: 4 * MAX_ANSWER_CHARS }))
          .toString("utf8");
      }
      case "write_file": {
        const st = await this.guest.writeFile(this.path(input.path), String(input.content), { parents: true });
        return `wrote ${st.size} bytes to ${st.path}`;
      }
      default:
        return `error unknown_tool: there is no tool "${name}"`;
    }
  }

  /** A model's path, relative to the working directory and kept inside it. */
  private path(p: unknown): string {
    const full = posix.resolve(this.workdir, String(p));
    if (full !== this.workdir && !full.startsWith(this.workdir + "/")) {
      throw new AgentdError("unsafe_path", `${String(p)} is outside the working directory ${this.workdir}`);
    }
    return full;
  }
}

async function main(url: string, token: string, workdir: string): Promise<void> {
  const guest = new Client({ url, token });
  const tools = new SandboxTools(guest, workdir);
  try {
    for await (const line of createInterface({ input: process.stdin })) {
      if (!line.trim()) continue;
      const call = JSON.parse(line) as ToolCall;
      process.stdout.write(JSON.stringify({ name: call.name, output: await tools.call(call) }) + "\n");
    }
  } finally {
    guest.close();
  }
}

if (process.argv[1]?.endsWith("agent_tool.js")) {
  const [url, token, workdir] = process.argv.slice(2);
  if (!url || !token || !workdir) {
    process.stderr.write("usage: node agent_tool.js URL TOKEN WORKDIR < calls.jsonl\n");
    process.exit(2);
  }
  await main(url, token, workdir);
}
