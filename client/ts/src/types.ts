// Wire types of protocol v1 (docs/PROTOCOL.md; docs/openapi.yaml), named
// as on the wire. Answers may carry members a newer daemon added.

export interface Health {
  status: "ok";
  version: string;
  protocol: number;
  bootstrapped: boolean;
  busy: boolean;
  execs: number;
  uptime_ms: number;
  runtimes: string[];
  /** How long an acked record lingers (the daemon's --ack-ttl-sec). */
  ack_ttl_sec: number;
  /** The retention caps in force; unread output beyond them becomes gaps. */
  retention: { stream_bytes: number; total_bytes: number };
}

export interface BootstrapResult {
  ok: boolean;
  replayed: boolean;
}

/** The start request: exactly one of argv and command. */
export interface ExecRequest {
  argv?: string[];
  command?: string;
  shell?: string;
  env?: Record<string, string | null>;
  cwd?: string;
  user?: string;
  group?: string;
  /** Whole stdin: a string is sent as UTF-8 text, bytes as stdin_b64. */
  stdin?: string | Uint8Array;
  stdin_stream?: boolean;
  timeout_sec?: number;
  kill_grace_sec?: number;
  pty?: { rows: number; cols: number; term?: string };
}

export interface ExecInfo {
  id: string;
  state: "running" | "exited";
  pid: number;
  exit_code: number | null;
  signal: string | null;
  timed_out: boolean;
  killed_by: string | null;
  started_at: string;
  ended_at: string | null;
  duration_ms: number;
  stdout_bytes: number;
  stderr_bytes: number;
  stdout_retained_from: number;
  stderr_retained_from: number;
  acked: boolean;
  error: string | null;
}

/** Bytes [from, next) of one stream from a poll; gap: bytes lost before them. */
export interface OutputChunk {
  from: number;
  next: number;
  data: Buffer;
  gap?: { from: number; to: number };
}

export interface PollResult {
  exec: ExecInfo;
  stdout?: OutputChunk;
  stderr?: OutputChunk;
}

export interface PollOptions {
  stdoutFrom?: number;
  stderrFrom?: number;
  maxBytes?: number;
  waitMs?: number;
}

/** The next byte offset of each stream: persist with the exec id to reattach. */
export interface Cursors {
  stdout: number;
  stderr: number;
}

/** Output bytes at absolute `offset`; every byte is delivered exactly once, in order. */
export interface OutputEvent<K extends "stdout" | "stderr" = "stdout" | "stderr"> {
  kind: K;
  offset: number;
  data: Buffer;
  cursors: Cursors;
}

export type StreamEvent =
  | OutputEvent<"stdout">
  | OutputEvent<"stderr">
  | { kind: "gap"; stream: "stdout" | "stderr"; from: number; to: number; cursors: Cursors }
  | { kind: "exit"; exec: ExecInfo; cursors: Cursors };

export interface RunResult {
  id: string;
  /** 128+n for a signal, 124 for a timeout, -1 when unknown. */
  exitCode: number;
  signal: string | null;
  timedOut: boolean;
  killedBy: string | null;
  durationMs: number;
  stdout: Buffer;
  stderr: Buffer;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  exec: ExecInfo;
}

export interface CodeRunResult {
  summary: string;
  exit_code: number;
  success: boolean;
  stdout: string;
  stderr: string;
  truncated: boolean;
  duration_ms: number;
  changed_files: { path: string; change: "added" | "modified" | "removed" }[];
}

export interface FileStat {
  path: string;
  type: "file" | "dir" | "symlink" | "other";
  size: number;
  /** Four octal digits: "0755", "4755". */
  mode: string;
  uid: number;
  gid: number;
  mtime: string;
  target: string | null;
}

export interface TreeStats {
  /** Archive members written or extracted. */
  entries: number;
  /** Regular-file content bytes. */
  bytes: number;
}
