// Errors of the agentd client: AgentdError, carrying the daemon's stable
// code (docs/PROTOCOL.md, "Errors"), the HTTP status (0 when no answer came
// back), the daemon's message and its details; and one subclass per code,
// named as in docs/CLIENT.md, "Error classes" (the same names in all three
// clients), with UnknownError for a code this client does not know.
// Four codes never appear on the wire: transport_error (no answer),
// deadline_exceeded (a client deadline passed), protocol_error (an answer
// that is not this protocol) and protocol_mismatch (the daemon's
// /v1/health names a protocol major this client does not speak).

/** The stable codes of docs/PROTOCOL.md plus the four client-side ones. */
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
  | "context_not_found" | "context_gone" | "context_id_conflict" | "too_many_contexts"
  | "context_busy" | "run_id_conflict" | "egress_name_unresolved" | "run_lost"
  | "transport_error" | "deadline_exceeded" | "protocol_error" | "protocol_mismatch";

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

// One class per code (docs/CLIENT.md, "Error classes"; test/tables.test.ts
// checks this list against that table).
export class InvalidRequest extends AgentdError { override name = "InvalidRequest"; }
export class InvalidJson extends AgentdError { override name = "InvalidJson"; }
export class PayloadTooLarge extends AgentdError { override name = "PayloadTooLarge"; }
export class HeadersTooLarge extends AgentdError { override name = "HeadersTooLarge"; }
export class RouteNotFound extends AgentdError { override name = "RouteNotFound"; }
export class MethodNotAllowed extends AgentdError { override name = "MethodNotAllowed"; }
export class RequestTimeout extends AgentdError { override name = "RequestTimeout"; }
export class TooManyConnections extends AgentdError { override name = "TooManyConnections"; }
export class ShuttingDown extends AgentdError { override name = "ShuttingDown"; }
export class Unauthorized extends AgentdError { override name = "Unauthorized"; }
export class NotBootstrapped extends AgentdError { override name = "NotBootstrapped"; }
export class AlreadyBootstrapped extends AgentdError { override name = "AlreadyBootstrapped"; }
export class ExecNotFound extends AgentdError { override name = "ExecNotFound"; }
export class ExecIdConflict extends AgentdError { override name = "ExecIdConflict"; }
export class ExecReleased extends AgentdError { override name = "ExecReleased"; }
export class ExecRunning extends AgentdError { override name = "ExecRunning"; }
export class TooManyExecs extends AgentdError { override name = "TooManyExecs"; }
export class StdinNotStreamed extends AgentdError { override name = "StdinNotStreamed"; }
export class StdinOffsetMismatch extends AgentdError { override name = "StdinOffsetMismatch"; }
export class StdinClosed extends AgentdError { override name = "StdinClosed"; }
export class UnknownUser extends AgentdError { override name = "UnknownUser"; }
export class UnknownGroup extends AgentdError { override name = "UnknownGroup"; }
export class NotAPty extends AgentdError { override name = "NotAPty"; }
export class NotFound extends AgentdError { override name = "NotFound"; }
export class IsADirectory extends AgentdError { override name = "IsADirectory"; }
export class NotADirectory extends AgentdError { override name = "NotADirectory"; }
export class AlreadyExists extends AgentdError { override name = "AlreadyExists"; }
export class PermissionDenied extends AgentdError { override name = "PermissionDenied"; }
export class DirectoryNotEmpty extends AgentdError { override name = "DirectoryNotEmpty"; }
export class UnsafePath extends AgentdError { override name = "UnsafePath"; }
export class InvalidRange extends AgentdError { override name = "InvalidRange"; }
export class RangeNotSatisfiable extends AgentdError { override name = "RangeNotSatisfiable"; }
export class InvalidArchive extends AgentdError { override name = "InvalidArchive"; }
export class ArchiveTooLarge extends AgentdError { override name = "ArchiveTooLarge"; }
export class InsufficientStorage extends AgentdError { override name = "InsufficientStorage"; }
export class RuntimeUnavailable extends AgentdError { override name = "RuntimeUnavailable"; }
export class LimitUnsupported extends AgentdError { override name = "LimitUnsupported"; }
export class RestrictedUserUnknown extends AgentdError { override name = "RestrictedUserUnknown"; }
export class ProfileUnsupported extends AgentdError { override name = "ProfileUnsupported"; }
export class ContextNotFound extends AgentdError { override name = "ContextNotFound"; }
export class ContextGone extends AgentdError { override name = "ContextGone"; }
export class ContextIdConflict extends AgentdError { override name = "ContextIdConflict"; }
export class TooManyContexts extends AgentdError { override name = "TooManyContexts"; }
export class ContextBusy extends AgentdError { override name = "ContextBusy"; }
export class RunIdConflict extends AgentdError { override name = "RunIdConflict"; }
/** The daemon crashed while this run_id's run was in progress, or after it answered: the context survived,
 * the answer is lost (details.ran: whether the interpreter ran the cell; details.exit_code when it finished). */
export class RunLost extends AgentdError { override name = "RunLost"; }
/** A host name of an egress rule had no address when the exec started (details.name, details.reason). */
export class EgressNameUnresolved extends AgentdError { override name = "EgressNameUnresolved"; }
export class PortUnreachable extends AgentdError { override name = "PortUnreachable"; }
export class IoError extends AgentdError { override name = "IoError"; }
export class InternalError extends AgentdError { override name = "InternalError"; }
export class CrossDevice extends AgentdError { override name = "CrossDevice"; }
export class TooManyWaits extends AgentdError { override name = "TooManyWaits"; }
export class TooManyWatches extends AgentdError { override name = "TooManyWatches"; }
export class Quarantined extends AgentdError { override name = "Quarantined"; }
export class Resetting extends AgentdError { override name = "Resetting"; }
export class PreconditionFailed extends AgentdError { override name = "PreconditionFailed"; }
export class EditMismatch extends AgentdError { override name = "EditMismatch"; }
export class TransportError extends AgentdError { override name = "TransportError"; }
export class DeadlineExceeded extends AgentdError { override name = "DeadlineExceeded"; }
export class ProtocolError extends AgentdError { override name = "ProtocolError"; }
/** The daemon speaks another protocol major (docs/CLIENT.md, "Version negotiation"). */
export class ProtocolMismatch extends AgentdError { override name = "ProtocolMismatch"; }
/** A code this client does not know (a newer daemon's), carried as sent. */
export class UnknownError extends AgentdError { override name = "UnknownError"; }

const CLASSES: Record<string, new (...a: ConstructorParameters<typeof AgentdError>) => AgentdError> = {
  invalid_request: InvalidRequest,
  invalid_json: InvalidJson,
  payload_too_large: PayloadTooLarge,
  headers_too_large: HeadersTooLarge,
  route_not_found: RouteNotFound,
  method_not_allowed: MethodNotAllowed,
  request_timeout: RequestTimeout,
  too_many_connections: TooManyConnections,
  shutting_down: ShuttingDown,
  unauthorized: Unauthorized,
  not_bootstrapped: NotBootstrapped,
  already_bootstrapped: AlreadyBootstrapped,
  exec_not_found: ExecNotFound,
  exec_id_conflict: ExecIdConflict,
  exec_released: ExecReleased,
  exec_running: ExecRunning,
  too_many_execs: TooManyExecs,
  stdin_not_streamed: StdinNotStreamed,
  stdin_offset_mismatch: StdinOffsetMismatch,
  stdin_closed: StdinClosed,
  unknown_user: UnknownUser,
  unknown_group: UnknownGroup,
  not_a_pty: NotAPty,
  not_found: NotFound,
  is_directory: IsADirectory,
  not_a_directory: NotADirectory,
  already_exists: AlreadyExists,
  permission_denied: PermissionDenied,
  directory_not_empty: DirectoryNotEmpty,
  unsafe_path: UnsafePath,
  invalid_range: InvalidRange,
  range_not_satisfiable: RangeNotSatisfiable,
  invalid_archive: InvalidArchive,
  archive_too_large: ArchiveTooLarge,
  insufficient_storage: InsufficientStorage,
  runtime_unavailable: RuntimeUnavailable,
  limit_unsupported: LimitUnsupported,
  restricted_user_unknown: RestrictedUserUnknown,
  profile_unsupported: ProfileUnsupported,
  port_unreachable: PortUnreachable,
  io_error: IoError,
  internal: InternalError,
  cross_device: CrossDevice,
  too_many_waits: TooManyWaits,
  too_many_watches: TooManyWatches,
  quarantined: Quarantined,
  resetting: Resetting,
  precondition_failed: PreconditionFailed,
  edit_mismatch: EditMismatch,
  context_not_found: ContextNotFound,
  context_gone: ContextGone,
  context_id_conflict: ContextIdConflict,
  too_many_contexts: TooManyContexts,
  context_busy: ContextBusy,
  run_id_conflict: RunIdConflict,
  egress_name_unresolved: EgressNameUnresolved,
  run_lost: RunLost,
  transport_error: TransportError,
  deadline_exceeded: DeadlineExceeded,
  protocol_error: ProtocolError,
  protocol_mismatch: ProtocolMismatch,
};

/** The error of `code`, as an instance of its class (UnknownError for a code not in the table). */
export function makeError(code: string, message: string, status = 0, details: ErrorDetails = {}): AgentdError {
  const Class = Object.prototype.hasOwnProperty.call(CLASSES, code) ? CLASSES[code]! : UnknownError;
  return new Class(code, message, status, details);
}

export function transportError(message: string, details: ErrorDetails = {}): AgentdError {
  return makeError("transport_error", message, 0, details);
}

export function deadlineExceeded(message: string, details: ErrorDetails = {}): AgentdError {
  return makeError("deadline_exceeded", message, 0, details);
}

export function protocolError(message: string, details: ErrorDetails = {}): AgentdError {
  return makeError("protocol_error", message, 0, details);
}

export function protocolMismatch(message: string, details: ErrorDetails = {}): AgentdError {
  return makeError("protocol_mismatch", message, 0, details);
}

export function invalidRequest(message: string, details: ErrorDetails = {}): AgentdError {
  return makeError("invalid_request", message, 0, details);
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
  return makeError(code, typeof message === "string" ? message : code, status, details);
}

/** Failures after which a stream reconnects and a tree transfer starts again. */
export function isRetryable(e: unknown): boolean {
  if (!(e instanceof AgentdError)) return false;
  return e.code === "transport_error" || e.code === "deadline_exceeded" ||
    [500, 502, 503, 504].includes(e.status);
}
