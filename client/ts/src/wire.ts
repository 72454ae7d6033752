// The client boundary: each answer type decoded from the wire's snake_case
// JSON into this package's camelCase types, member by member, and the
// camelCase request options encoded back. Explicit per type, so user data
// (environment maps, file names, a run's result value, error details)
// passes through untouched, and members a newer daemon adds are ignored.
import type {
  BootstrapResult, CodeRunResult, ContextInfo, EgressPolicy, EgressReport, ExceptionFrame, ExecInfo, ExecRequest,
  FileStat, Health, LimitHit, Limits, ResetReport, Restriction, RunCodeOptions, RunException, RuntimeSelfTest,
} from "./types.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Wire = Record<string, any>;

const obj = (v: unknown): Wire => (typeof v === "object" && v !== null ? v as Wire : {});
const orNull = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

export function limitsFromWire(w: unknown): Limits {
  const l = obj(w);
  const out: Limits = {};
  if (l.memory_mb !== undefined) out.memoryMb = l.memory_mb;
  if (l.pids !== undefined) out.pids = l.pids;
  if (l.cpu_sec !== undefined) out.cpuSec = l.cpu_sec;
  if (l.file_size_mb !== undefined) out.fileSizeMb = l.file_size_mb;
  if (l.output_bytes !== undefined) out.outputBytes = l.output_bytes;
  if (l.kill_on_output !== undefined) out.killOnOutput = l.kill_on_output;
  if (l.cpus !== undefined) out.cpus = l.cpus;
  if (l.disk_bytes !== undefined) out.diskBytes = l.disk_bytes;
  if (l.disk_path !== undefined) out.diskPath = l.disk_path;
  return out;
}

function limitsToWire(l: Limits, into: Wire): void {
  if (l.memoryMb !== undefined) into.memory_mb = l.memoryMb;
  if (l.pids !== undefined) into.pids = l.pids;
  if (l.cpuSec !== undefined) into.cpu_sec = l.cpuSec;
  if (l.fileSizeMb !== undefined) into.file_size_mb = l.fileSizeMb;
  if (l.outputBytes !== undefined) into.output_bytes = l.outputBytes;
  if (l.killOnOutput !== undefined) into.kill_on_output = l.killOnOutput;
  if (l.cpus !== undefined) into.cpus = l.cpus;
  if (l.diskBytes !== undefined) into.disk_bytes = l.diskBytes;
  if (l.diskPath !== undefined) into.disk_path = l.diskPath;
}

const limitHit = (v: unknown): LimitHit | null => {
  if (typeof v !== "object" || v === null) return null;
  const w = v as Wire;
  return { name: w.name, value: w.value, unit: w.unit };
};

function restriction(v: unknown): Restriction | undefined {
  if (typeof v !== "object" || v === null) return undefined;
  const w = v as Wire;
  const out: Restriction = {
    user: w.user, uid: w.uid, gid: w.gid, noNewPrivs: w.no_new_privs, capabilities: w.capabilities,
    seccompRefusedSyscalls: w.seccomp_refused_syscalls, seccomp: w.seccomp ?? true,
    readonlyPaths: w.readonly_paths ?? [],
  };
  if (w.seccomp_why !== undefined) out.seccompWhy = w.seccomp_why;
  return out;
}

export function execInfoFromWire(v: unknown): ExecInfo {
  const w = obj(v);
  const out: ExecInfo = {
    id: w.id, state: w.state, pid: w.pid, exitCode: orNull(w.exit_code), signal: orNull(w.signal),
    timedOut: w.timed_out, killedBy: orNull(w.killed_by), startedAt: w.started_at, endedAt: orNull(w.ended_at),
    durationMs: w.duration_ms, stdoutBytes: w.stdout_bytes, stderrBytes: w.stderr_bytes,
    stdoutRetainedFrom: w.stdout_retained_from, stderrRetainedFrom: w.stderr_retained_from, acked: w.acked,
    error: orNull(w.error),
  };
  if (w.limits !== undefined) {
    out.limits = limitsFromWire(w.limits);
    if (w.limits?.timeout_sec !== undefined) out.limits.timeoutSec = w.limits.timeout_sec;
  }
  if (w.limit !== undefined) out.limit = limitHit(w.limit);
  if (w.profile !== undefined) out.profile = w.profile;
  const r = restriction(w.restriction);
  if (r) out.restriction = r;
  if (w.network !== undefined) out.network = w.network;
  if (w.egress !== undefined && w.egress !== null) out.egress = egressPolicyFromWire(w.egress);
  return out;
}

function egressPolicyFromWire(v: unknown): EgressPolicy {
  const w = obj(v);
  const out: EgressPolicy = { mode: w.mode, allow: w.allow ?? [], deny: w.deny ?? [], dns: w.dns ?? false };
  if (w.resolved !== undefined && w.resolved !== null) return { ...out, resolved: w.resolved };
  return out;
}

export function egressReportFromWire(v: unknown): EgressReport {
  const w = obj(v);
  const out: EgressReport = {
    id: w.id, accounting: w.accounting, attempts: w.attempts, allowed: w.allowed, refused: w.refused,
    overflow: w.overflow, maxDestinations: w.max_destinations, destinationsOmitted: w.destinations_omitted ?? 0,
    destinations: (Array.isArray(w.destinations) ? w.destinations : []).map((x: unknown) => {
      const d = obj(x);
      return {
        family: d.family, protocol: d.protocol, address: d.address, port: d.port, verdict: d.verdict,
        count: d.count, firstAt: d.first_at, lastAt: d.last_at,
      };
    }),
  };
  if (w.policy !== undefined) out.policy = egressPolicyFromWire(w.policy);
  if (w.incomplete !== undefined && w.incomplete !== null) {
    const i = obj(w.incomplete);
    out.incomplete = { since: i.since, why: i.why };
  }
  return out;
}

export function execRequestToWire(r: ExecRequest): Wire {
  const w: Wire = {};
  if (r.argv !== undefined) w.argv = r.argv;
  if (r.command !== undefined) w.command = r.command;
  if (r.runtime !== undefined) w.runtime = r.runtime;
  if (r.code !== undefined) w.code = r.code;
  if (r.shell !== undefined) w.shell = r.shell;
  if (r.env !== undefined) w.env = r.env; // the caller's names, as given
  if (r.cwd !== undefined) w.cwd = r.cwd;
  if (r.user !== undefined) w.user = r.user;
  if (r.group !== undefined) w.group = r.group;
  if (typeof r.stdin === "string") w.stdin = r.stdin;
  else if (r.stdin !== undefined) w.stdin_b64 = Buffer.from(r.stdin).toString("base64");
  if (r.stdinStream !== undefined) w.stdin_stream = r.stdinStream;
  if (r.timeoutSec !== undefined) w.timeout_sec = r.timeoutSec;
  if (r.killGraceSec !== undefined) w.kill_grace_sec = r.killGraceSec;
  if (r.pty !== undefined) w.pty = r.pty;
  if (r.profile !== undefined) w.profile = r.profile;
  if (r.network !== undefined) w.network = r.network;
  if (r.egress !== undefined) w.egress = r.egress;
  limitsToWire(r, w);
  return w;
}

export function runCodeOptionsToWire(o: RunCodeOptions): Wire {
  const w: Wire = {};
  if (o.timeoutSec !== undefined) w.timeout_sec = o.timeoutSec;
  if (o.cwd !== undefined) w.cwd = o.cwd;
  if (o.env !== undefined) w.env = o.env;
  if (o.user !== undefined) w.user = o.user;
  if (o.group !== undefined) w.group = o.group;
  if (o.stdin !== undefined) w.stdin = o.stdin;
  if (o.scanChanges !== undefined) w.scan_changes = o.scanChanges;
  if (o.profile !== undefined) w.profile = o.profile;
  if (o.network !== undefined) w.network = o.network;
  if (o.egress !== undefined) w.egress = o.egress;
  if (o.resultMarker !== undefined) w.result_marker = o.resultMarker;
  if (o.artifactsDir !== undefined) w.artifacts_dir = o.artifactsDir;
  limitsToWire(o, w);
  return w;
}

export function healthFromWire(v: unknown): Health {
  const w = obj(v);
  const out: Health = {
    status: w.status, version: w.version, protocol: w.protocol, bootstrapped: w.bootstrapped, busy: w.busy,
    execs: w.execs, uptimeMs: w.uptime_ms, runtimes: Array.isArray(w.runtimes) ? w.runtimes : [],
    ackTtlSec: w.ack_ttl_sec,
    retention: { streamBytes: obj(w.retention).stream_bytes, totalBytes: obj(w.retention).total_bytes },
  };
  if (Array.isArray(w.runtimes_unavailable)) {
    out.runtimesUnavailable = w.runtimes_unavailable.map((u: Wire) => ({
      runtime: obj(u).runtime, code: obj(u).code, reason: obj(u).reason,
    }));
  }
  if (Array.isArray(w.runtime_self_tests)) {
    out.runtimeSelfTests = w.runtime_self_tests.map((t: Wire) => {
      const s: RuntimeSelfTest = { runtime: obj(t).runtime, program: obj(t).program, state: obj(t).state };
      if (obj(t).duration_ms !== undefined) s.durationMs = obj(t).duration_ms;
      return s;
    });
  }
  if (w.limits !== undefined) {
    const l = obj(w.limits);
    out.limits = {
      mechanism: l.mechanism, supported: Array.isArray(l.supported) ? l.supported : [],
      defaults: limitsFromWire(l.defaults), runTimeoutSec: l.run_timeout_sec,
    };
    if (l.network_why !== undefined) out.limits.networkWhy = l.network_why;
    if (Array.isArray(l.egress_modes)) out.limits.egressModes = l.egress_modes;
    if (l.egress_why !== undefined) out.limits.egressWhy = l.egress_why;
    if (l.egress_enforcer !== undefined) out.limits.egressEnforcer = l.egress_enforcer;
  }
  if (w.profiles !== undefined) {
    const p = obj(w.profiles);
    const r = obj(p.restricted);
    out.profiles = { default: p.default, restricted: { available: r.available, user: r.user } };
    if (r.seccomp !== undefined) out.profiles.restricted.seccomp = r.seccomp;
    if (r.refused_syscalls !== undefined) out.profiles.restricted.refusedSyscalls = r.refused_syscalls;
    if (r.why !== undefined) out.profiles.restricted.why = r.why;
    if (Array.isArray(r.readonly_paths)) out.profiles.restricted.readonlyPaths = r.readonly_paths;
    if (r.readonly_why !== undefined) out.profiles.restricted.readonlyWhy = r.readonly_why;
  }
  if (w.privileged_generation !== undefined) out.privilegedGeneration = w.privileged_generation;
  if (w.generation !== undefined) out.generation = w.generation;
  if (w.boot_id !== undefined) out.bootId = w.boot_id;
  if (w.state !== undefined) out.state = w.state;
  if (Array.isArray(w.reset_paths)) {
    out.resetPaths = w.reset_paths.map((p: Wire) => {
      const one: { path: string; mode: "overlay" | "restore"; overlayUnavailable?: string } = {
        path: obj(p).path, mode: obj(p).mode,
      };
      if (obj(p).overlay_unavailable !== undefined) one.overlayUnavailable = obj(p).overlay_unavailable;
      return one;
    });
  }
  if (w.reset_processes !== undefined && w.reset_processes !== null) {
    const rp = obj(w.reset_processes);
    const one: { mode: "cgroup" | "subreaper"; cgroupUnavailable?: string } = { mode: rp.mode };
    if (rp.cgroup_unavailable !== undefined) one.cgroupUnavailable = rp.cgroup_unavailable;
    out.resetProcesses = one;
  }
  if (w.reason !== undefined) out.reason = w.reason;
  if (w.errno !== undefined) out.errno = w.errno;
  if (w.upgrades !== undefined) out.upgrades = w.upgrades;
  if (w.upgrade_failures !== undefined) out.upgradeFailures = w.upgrade_failures;
  return out;
}

export function bootstrapResultFromWire(v: unknown): BootstrapResult {
  const w = obj(v);
  return { ok: w.ok, replayed: w.replayed };
}

export function resetReportFromWire(v: unknown): ResetReport {
  const w = obj(v);
  const out: ResetReport = {
    clean: w.clean, generation: w.generation, killedProcesses: w.killed_processes,
    removed: {
      entries: obj(w.removed).entries, bytes: obj(w.removed).bytes,
      ipcObjects: obj(w.removed).ipc_objects ?? 0,
    },
    remaining: Array.isArray(w.remaining)
      ? w.remaining.map((r: Wire) => ({ kind: obj(r).kind, name: obj(r).name, reason: obj(r).reason }))
      : [],
    durationMs: w.duration_ms, replayed: w.replayed,
  };
  if (w.privileged_generation !== undefined) out.privilegedGeneration = w.privileged_generation;
  return out;
}

function frame(v: unknown): ExceptionFrame {
  const w = obj(v);
  return { file: w.file, line: w.line, function: w.function, sourceLine: orNull(w.source_line) };
}

function runException(v: unknown): RunException | null {
  if (typeof v !== "object" || v === null) return null;
  const w = v as Wire;
  const out: RunException = {
    type: w.type, message: w.message, file: orNull(w.file), line: orNull(w.line), column: orNull(w.column),
    sourceLine: orNull(w.source_line), frames: Array.isArray(w.frames) ? w.frames.map(frame) : [],
    omittedFrames: w.omitted_frames,
  };
  if (w.keys_present !== undefined) out.keysPresent = w.keys_present;
  if (w.keys_total !== undefined) out.keysTotal = w.keys_total;
  return out;
}

export function contextInfoFromWire(v: unknown): ContextInfo {
  const w = obj(v);
  return {
    id: w.id, runtime: w.runtime, state: w.state, cwd: w.cwd, pid: w.pid, runs: w.runs,
    createdAt: w.created_at, profile: w.profile ?? "unrestricted", network: orNull(w.network),
    endedReason: orNull(w.ended_reason), killedBy: orNull(w.killed_by), limit: limitHit(w.limit),
  };
}

export function codeRunResultFromWire(v: unknown): CodeRunResult {
  const w = obj(v);
  const out: CodeRunResult = {
    summary: w.summary, exitCode: w.exit_code, success: w.success, stdout: w.stdout, stderr: w.stderr,
    truncated: w.truncated, durationMs: w.duration_ms,
    changedFiles: Array.isArray(w.changed_files)
      ? w.changed_files.map((f: Wire) => ({ path: obj(f).path, change: obj(f).change, type: obj(f).type }))
      : [],
    changedFilesTruncated: w.changed_files_truncated, changedFilesBound: limitHit(w.changed_files_bound),
    signal: orNull(w.signal), timedOut: w.timed_out, killedBy: orNull(w.killed_by), limit: limitHit(w.limit),
    stdoutBytes: w.stdout_bytes, stderrBytes: w.stderr_bytes, runtime: w.runtime, cwd: w.cwd,
    timeoutSec: w.timeout_sec, error: orNull(w.error),
  };
  if (w.profile !== undefined) out.profile = w.profile;
  const r = restriction(w.restriction);
  if (r) out.restriction = r;
  if (w.network !== undefined) out.network = w.network;
  if (w.egress !== undefined && w.egress !== null) out.egress = egressReportFromWire(w.egress);
  if (w.exception !== undefined) out.exception = runException(w.exception);
  if ("result" in w) out.result = w.result; // the caller's own value, as sent
  if (w.result_error !== undefined) out.resultError = w.result_error;
  if (Array.isArray(w.artifacts)) {
    out.artifacts = w.artifacts.map((a: Wire) => ({
      path: obj(a).path, mediaType: obj(a).media_type, bytes: obj(a).bytes, sha256: orNull(obj(a).sha256),
    }));
    out.artifactsTruncated = w.artifacts_truncated;
    out.artifactsBound = limitHit(w.artifacts_bound);
  }
  return out;
}

/** The wire's four octal digits ("0755") as the permission bits (493). */
export function modeFromWire(v: unknown): number {
  return typeof v === "string" && /^[0-7]{1,6}$/.test(v) ? parseInt(v, 8) : typeof v === "number" ? v : 0;
}

export function fileStatFromWire(v: unknown): FileStat {
  const w = obj(v);
  const out: FileStat = {
    path: w.path, type: w.type, size: w.size, mode: modeFromWire(w.mode), uid: w.uid, gid: w.gid, mtime: w.mtime,
    target: orNull(w.target),
  };
  if (w.etag !== undefined) out.etag = w.etag;
  return out;
}
