// Errors of the agentd client: one class, AgentdError, carrying the
// daemon's stable code (docs/PROTOCOL.md, "Errors"), the HTTP status (0
// when no answer came back), the daemon's message and its details.
// Three codes never appear on the wire: transport_error (no answer),
// deadline_exceeded (a client deadline passed) and protocol_error (an
// answer that is not this protocol).

/** The stable codes of docs/PROTOCOL.md plus the three client-side ones. */
export type ErrorCode =
  | "invalid_request" | "invalid_json" | "payload_too_large" | "headers_too_large"
  | "route_not_found" | "method_not_allowed" | "request_timeout" | "too_many_connections"
  | "shutting_down" | "unauthorized" | "not_bootstrapped" | "already_bootstrapped"
  | "exec_not_found" | "exec_id_conflict" | "exec_released" | "exec_running" | "too_many_execs"
  | "stdin_not_streamed" | "stdin_offset_mismatch" | "stdin_closed" | "unknown_user"
  | "unknown_group" | "not_a_pty" | "not_found" | "is_directory" | "not_a_directory"
  | "already_exists" | "permission_denied" | "directory_not_empty" | "unsafe_path"
  | "invalid_range" | "range_not_satisfiable" | "invalid_archive" | "archive_too_large"
  | "insufficient_storage" | "runtime_unavailable" | "limit_unsupported" | "port_unreachable" | "io_error"
  | "internal" | "cross_device" | "too_many_watches" | "quarantined" | "resetting"
  | "too_many_waits"
  | "precondition_failed" | "edit_mismatch" | "restricted_user_unknown" | "profile_unsupported"
  | "transport_error" | "deadline_exceeded" | "protocol_error";

export type ErrorDetails = Record<string, unknown>;

export class AgentdError extends Error {
  override name = "AgentdError";

  constructor(
    /** The stable code; a newer daemon may send codes not listed in ErrorCode. */
    readonly code: ErrorCode | (string & {}),
    message: string,
    /** The HTTP status, or 0 when no answer came back. */
    readonly status = 0,
    /** The real numbers: sizes, limits, the offending field, path or member. */
    readonly details: ErrorDetails = {},
  ) {
    super(message);
  }

  /** True when this is the error `code` (a type guard for switch-free checks). */
  is(code: ErrorCode): boolean {
    return this.code === code;
  }
}

export function transportError(message: string, details: ErrorDetails = {}): AgentdError {
  return new AgentdError("transport_error", message, 0, details);
}

export function deadlineExceeded(message: string, details: ErrorDetails = {}): AgentdError {
  return new AgentdError("deadline_exceeded", message, 0, details);
}

export function protocolError(message: string, details: ErrorDetails = {}): AgentdError {
  return new AgentdError("protocol_error", message, 0, details);
}

export function invalidRequest(message: string, details: ErrorDetails = {}): AgentdError {
  return new AgentdError("invalid_request", message, 0, details);
}

/** Decodes a non-2xx answer: {"error": {"code", "message", ...details}}. */
export function errorFromBody(status: number, body: Buffer): AgentdError {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString("utf8"));
  } catch {
    doc = undefined;
  }
  const err = (doc as { error?: unknown } | undefined)?.error;
  if (typeof err !== "object" || err === null || typeof (err as { code?: unknown }).code !== "string") {
    return protocolError(`HTTP ${status} without an agentd error body`, { http_status: status });
  }
  const { code, message, ...details } = err as { code: string; message?: unknown };
  return new AgentdError(code, typeof message === "string" ? message : code, status, details);
}

/** Failures after which a stream reconnects and a tree transfer starts again. */
export function isRetryable(e: unknown): boolean {
  if (!(e instanceof AgentdError)) return false;
  return e.code === "transport_error" || e.code === "deadline_exceeded" ||
    [500, 502, 503, 504].includes(e.status);
}
