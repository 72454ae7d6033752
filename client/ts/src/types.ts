// Types of protocol v1 (docs/PROTOCOL.md; docs/openapi.yaml) as this
// client presents them: the wire's members in camelCase (uptime_ms is
// uptimeMs), decoded and encoded member by member in wire.ts.

export interface Health {
  /** Anything but "ok" comes with a 503 and `reason` (docs/PROTOCOL.md, "Health"). */
  status: "ok" | "draining" | "resetting" | "quarantined" | "state_dir_unwritable";
  /** Why the daemon cannot serve; absent while status is "ok". */
  reason?: string;
  /** With state_dir_unwritable: the errno name of the failed write (EROFS, ENOSPC, ...). */
  errno?: string;
  version: string;
  protocol: number;
  bootstrapped: boolean;
  busy: boolean;
  execs: number;
  uptimeMs: number;
  runtimes: string[];
  /** Every known runtime this guest cannot run, and why (absent from older daemons). */
  runtimesUnavailable?: UnavailableRuntime[];
  /** Each interpreter file's self-test, run once per file (absent from older daemons). */
  runtimeSelfTests?: RuntimeSelfTest[];
  /** How long an acked record lingers (the daemon's --ack-ttl-sec). */
  ackTtlSec: number;
  /** The retention caps in force; unread output beyond them becomes gaps. */
  retention: { streamBytes: number; totalBytes: number };
  /** The limit mechanism in force, what it enforces, and the defaults. */
  limits?: { mechanism: "cgroup2" | "cgroup1" | "rlimit"; supported: string[];
             defaults: Limits; runTimeoutSec: number; networkWhy?: string;
             /** The egress modes this guest enforces ([] where none can be) and why not. */
             egressModes?: EgressMode[]; egressWhy?: string;
             /** What enforces them: cgroup-BPF programs or nftables rules (absent: none). */
             egressEnforcer?: "bpf" | "nftables" };
  /** The default profile, the restricted user, the calls the filter refuses (seccomp
   *  false: no filter here, why says why) and the paths restricted execs see
   *  read-only (readonlyWhy: why none can be bound here). */
  profiles?: { default: Profile;
               restricted: { available: boolean; seccomp?: boolean; user: string;
                             refusedSyscalls?: string[];
                             why?: string; readonlyPaths?: string[]; readonlyWhy?: string } };
  /** An exec of this generation ran unrestricted as root (a reset clears it). */
  privilegedGeneration?: boolean;
  /** 0 at start, one more after each reset ("Reuse"). */
  generation?: number;
  /** 32 hex digits, random at every daemon start. */
  bootId?: string;
  state?: "ready" | "resetting" | "quarantined";
  /** How a reset returns each reset path (overlayUnavailable: why not overlay). */
  resetPaths?: { path: string; mode: "overlay" | "restore"; overlayUnavailable?: string }[];
  /** How a reset ends the tenant's processes (cgroupUnavailable: why not by cgroup). */
  resetProcesses?: { mode: "cgroup" | "subreaper"; cgroupUnavailable?: string };
  /** Upgrades in place since the daemon first started, and failed ones. */
  upgrades?: number;
  upgradeFailures?: number;
}

/** docs/PROTOCOL.md, "Profiles"; unset in a request: the daemon's --default-profile. */
export type Profile = "restricted" | "unrestricted";

/** What a restricted exec or run actually ran with. */
export interface Restriction {
  user: string;
  uid: number;
  gid: number;
  noNewPrivs: boolean;
  capabilities: "none";
  seccompRefusedSyscalls: number;
  /** false (with seccompWhy) only under the daemon's --restricted-without-seccomp on a
   *  kernel that cannot load the filter. */
  seccomp: boolean;
  seccompWhy?: string;
  /** Bound read-only in the exec's own mount namespace (empty: none could be). */
  readonlyPaths: string[];
}

/** A runtime this guest cannot run, with a stable code and a one-line reason. */
export interface UnavailableRuntime {
  runtime: string;
  code: "interpreter_not_found" | "not_executable" | "disabled_by_flag" | "self_test_failed";
  reason: string;
}

/** An interpreter's self-test: a trivial program run once per interpreter file (its
 *  verdict holds until the file changes). `durationMs` once it has ended. */
export interface RuntimeSelfTest {
  runtime: string;
  program: string;
  state: "pending" | "passed" | "failed";
  durationMs?: number;
}

/** Resource limits (docs/PROTOCOL.md, "Limits"); unset members take the daemon's defaults. */
export interface Limits {
  memoryMb?: number;
  pids?: number;
  cpuSec?: number;
  fileSizeMb?: number;
  outputBytes?: number;
  killOnOutput?: boolean;
  cpus?: number;
  /** A fresh tmpfs of this many bytes at `diskPath` (default /tmp), the exec's own;
   *  filling it ends the exec (killedBy "disk"). */
  diskBytes?: number;
  diskPath?: string;
}

/** The limit that ended an exec or run: {"name": "memory", "value": 256, "unit": "MiB"}. */
export interface LimitHit {
  name: string;
  value: number;
  unit: string;
}

/** One thing a reset found left over (docs/PROTOCOL.md, "Reuse"). */
export interface ResetRemaining {
  kind: string;
  name: string;
  reason: string;
}

/** The answer of POST /v1/reset; `clean: false` means quarantined. */
export interface ResetReport {
  clean: boolean;
  generation: number;
  killedProcesses: number;
  /** ipcObjects: System V IPC objects removed (--reset-ipc); 0 from older daemons. */
  removed: { entries: number; bytes: number; ipcObjects: number };
  remaining: ResetRemaining[];
  durationMs: number;
  /** True when this answers a retry with the recorded report. */
  replayed: boolean;
  /** An exec of the generation reset ran unrestricted as root (docs/SECURITY.md). */
  privilegedGeneration?: boolean;
}

export interface ResetOptions {
  /** Minted when absent; a retry with the same id answers the recorded report. */
  resetId?: string;
  /** The next tenant's token, installed in the same step (else bootstrap reopens). */
  nextToken?: string;
  /** The next tenant's launch environment. */
  env?: Record<string, string>;
}

export interface BootstrapResult {
  ok: boolean;
  replayed: boolean;
}

/** The start request: exactly one of argv, command, or runtime with code. */
export interface ExecRequest extends Limits {
  argv?: string[];
  command?: string;
  /** A code action as a detached exec ("Run code"). */
  runtime?: "shell" | "python" | "ts";
  code?: string;
  shell?: string;
  env?: Record<string, string | null>;
  cwd?: string;
  user?: string;
  group?: string;
  /** Whole stdin: a string is sent as UTF-8 text, bytes as stdin_b64. */
  stdin?: string | Uint8Array;
  stdinStream?: boolean;
  timeoutSec?: number;
  killGraceSec?: number;
  pty?: { rows: number; cols: number; term?: string };
  profile?: Profile;
  /** "none": only loopback, in a network namespace of its own (docs/PROTOCOL.md, "No network"). */
  network?: "none";
  /** The egress policy (docs/PROTOCOL.md, "Egress"); unset: the daemon's --default-egress. */
  egress?: EgressPolicy;
}

export type EgressMode = "public" | "allow" | "none" | "all";

/** Rules are "CIDR", "CIDR:PORT", "[IPv6-CIDR]:PORT", "HOST" or "HOST:PORT"; the most specific
 *  rule wins. A host name is resolved once when the exec starts (EgressNameUnresolved when it has
 *  no address). */
export interface EgressPolicy {
  mode: EgressMode;
  allow?: string[];
  deny?: string[];
  /** Also port 53 to the nameservers of the guest's /etc/resolv.conf. */
  dns?: boolean;
  /** Answered by the daemon, never sent: each host name of the rules and the addresses it had when
   *  the exec started, which the rules hold ({"pypi-mirror.internal": ["10.1.2.3"]}). */
  readonly resolved?: Record<string, string[]>;
}

/** One destination an exec tried; a refused raw or ICMP socket has address "" and port 0. */
export interface EgressDestination {
  family: "ipv4" | "ipv6";
  protocol: string;
  address: string;
  port: number;
  verdict: "allowed" | "refused";
  count: number;
  firstAt: string;
  lastAt: string;
}

/** GET /v1/execs/{id}/egress. accounting false: no policy; true with attempts 0: nothing tried. */
export interface EgressReport {
  id: string;
  accounting: boolean;
  policy?: EgressPolicy;
  attempts: number;
  allowed: number;
  refused: number;
  overflow: number;
  maxDestinations: number;
  destinations: EgressDestination[];
  /** Destinations left out of this answer (a run's lists at most 16). */
  destinationsOmitted: number;
  /**
   * Present when attempts are missing from the counts (a daemon restart
   * that could not take them over): since when (RFC 3339) and why.
   */
  incomplete?: { since: string; why: string };
}

/** What killExec sends: a signal name (default TERM) and the grace before KILL. */
export interface KillOptions {
  signal?: string;
  graceSec?: number;
}

export interface ExecInfo {
  id: string;
  state: "running" | "exited";
  pid: number;
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  killedBy: string | null;
  startedAt: string;
  endedAt: string | null;
  durationMs: number;
  stdoutBytes: number;
  stderrBytes: number;
  stdoutRetainedFrom: number;
  stderrRetainedFrom: number;
  acked: boolean;
  error: string | null;
  /** The limits in force (only those set). */
  limits?: Limits & { timeoutSec?: number };
  limit?: LimitHit | null;
  /** The profile it ran under; restriction: what was applied (restricted only). */
  profile?: Profile;
  restriction?: Restriction;
  /** "none" when it ran without network. */
  network?: "none";
  /** The egress policy in force, when one is. */
  egress?: EgressPolicy;
}

/** Bytes [start, next) of one stream from a poll; gap: bytes lost before them. */
export interface OutputChunk {
  start: number;
  next: number;
  data: Buffer;
  gap?: { from: number; to: number };
}

export interface PollResult {
  exec: ExecInfo;
  stdout?: OutputChunk;
  stderr?: OutputChunk;
}

/** The answer of a wait for output (docs/PROTOCOL.md, "Wait for output"). */
export interface OutputMatch {
  stream: "stdout" | "stderr";
  matched: boolean;
  /** Matched: the stream offsets [offset, end) and the matched bytes. */
  offset?: number;
  end?: number;
  text?: Buffer;
  /** Not matched: "timeout", "exited", "window_limit" or "scan_limit". */
  reason?: string;
  /** The cursor to resume from without losing a match. */
  next: number;
  gap?: { from: number; to: number };
  exec: ExecInfo;
}

export interface WaitForOutputOptions {
  stream?: "stdout" | "stderr";
  cursor?: number;
  /** Give up after this long (the answer then says "timeout"); absent: no limit. */
  timeoutMs?: number;
}

export interface PollOptions {
  stdoutFrom?: number;
  stderrFrom?: number;
  maxBytes?: number;
  waitMs?: number;
  /** With waitMs: new output alone does not end the wait, only the exit (or the time) does. */
  untilExit?: boolean;
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
  exitCode: number;
  success: boolean;
  stdout: string;
  stderr: string;
  truncated: boolean;
  durationMs: number;
  /** What changed under cwd, paths relative to it, sorted by path. */
  changedFiles: { path: string; change: "added" | "modified" | "removed";
                   type: "file" | "dir" | "symlink" | "other" }[];
  changedFilesTruncated: boolean;
  changedFilesBound: { name: string; value: number; unit: string } | null;
  signal: string | null;
  timedOut: boolean;
  killedBy: string | null;
  limit: LimitHit | null;
  /** The whole output lengths (stdout and stderr carry at most 64 KiB each). */
  stdoutBytes: number;
  stderrBytes: number;
  runtime: string;
  cwd: string;
  timeoutSec: number;
  error: string | null;
  profile?: Profile;
  restriction?: Restriction;
  /** "none" when it ran without network. */
  network?: "none";
  /** Its egress accounting, when it ran under a policy (at most 16 destinations). */
  egress?: EgressReport;
  /** What a python run raised (absent from older daemons). */
  exception?: RunException | null;
  /** The last result line's JSON value; absent when there was none. */
  result?: unknown;
  /** Why the last result line was not JSON (null otherwise). */
  resultError?: string | null;
  /** With artifactsDir: the files the run made there (absent when none was asked for). */
  artifacts?: Artifact[];
  /** True when a bound left artifacts out; `artifactsBound` names it. */
  artifactsTruncated?: boolean;
  artifactsBound?: LimitHit | null;
}

/** A file a run created or modified under its artifactsDir. */
export interface Artifact {
  /** Relative to the run's cwd, artifactsDir first. */
  path: string;
  /** Sniffed from the content, never from the name. */
  mediaType: string;
  bytes: number;
  /** Lowercase hex; null past the answer's hash budget. */
  sha256: string | null;
}

/** One frame of the caller's own code in a run's exception. */
export interface ExceptionFrame {
  file: string;
  line: number;
  function: string;
  sourceLine: string | null;
}

/** The structured exception of a run (docs/PROTOCOL.md, "Run code"). */
export interface RunException {
  type: string;
  message: string;
  /** "<string>" for the code itself, else a path (relative to cwd when under it). */
  file: string | null;
  line: number | null;
  /** A syntax error's column. */
  column: number | null;
  sourceLine: string | null;
  /** The caller's frames, outermost first (at most 30). */
  frames: ExceptionFrame[];
  /** Interpreter and library frames (and any beyond the bound), counted. */
  omittedFrames: number;
  /** A KeyError on a mapping: its keys (at most 50) and their count. */
  keysPresent?: string[];
  keysTotal?: number | null;
}

/** POST /v1/run's members beside runtime and code. */
/** A stateful context (docs/PROTOCOL.md, "Contexts"): a persistent interpreter. */
export interface ContextInfo {
  id: string;
  runtime: string;
  /** "ready", "running" (a run in progress) or "ended". */
  state: "ready" | "running" | "ended";
  cwd: string;
  pid: number;
  /** Runs answered (replays not counted). */
  runs: number;
  createdAt: string;
  profile: string;
  network: string | null;
  /** Once ended: "limit", "exited", "reset", "deleted", "failed" or "daemon_restart". */
  endedReason: string | null;
  killedBy: string | null;
  limit: { name: string; value: number; unit: string } | null;
}

/** The options of createContext: those of runCode that apply to the interpreter. */
export type ContextOptions = Omit<RunCodeOptions, "timeoutSec" | "stdin" | "artifactsDir">;

export interface ContextRunOptions {
  /** Clamped to 300 s; past it the interpreter is killed and the context ends. */
  timeoutSec?: number;
  /** A retry with it replays the answer and never runs the code twice (minted when absent). */
  runId?: string;
  /** As for runCode. */
  artifactsDir?: string;
  /**
   * Restates the context's egress policy (a different one is refused with
   * 400 invalid_request naming both); the answer's egress counts this
   * run's attempts either way.
   */
  egress?: EgressPolicy;
}

export interface RunCodeOptions extends Limits {
  timeoutSec?: number;
  cwd?: string;
  env?: Record<string, string | null>;
  user?: string;
  group?: string;
  stdin?: string;
  scanChanges?: boolean;
  profile?: Profile;
  network?: "none";
  /** The egress policy (docs/PROTOCOL.md, "Egress"). */
  egress?: EgressPolicy;
  /** Default "__AGENTD_RESULT__"; "" turns result lines off. */
  resultMarker?: string;
  /**
   * Relative to cwd: files the run creates or modifies there are answered as
   * `artifacts` (path, media type, bytes, sha256; never their content).
   */
  artifactsDir?: string;
}

export interface FileStat {
  path: string;
  type: "file" | "dir" | "symlink" | "other";
  size: number;
  /** The permission bits as a number (0o755 is 493; the wire's "0755" decoded). */
  mode: number;
  uid: number;
  gid: number;
  mtime: string;
  target: string | null;
  /** The content's ETag (regular files; docs/PROTOCOL.md, "ETags and preconditions"). */
  etag?: string | null;
}

export interface TreeStats {
  /** Archive members written or extracted. */
  entries: number;
  /** Regular-file content bytes. */
  bytes: number;
}
