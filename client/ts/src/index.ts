// @agentd/client: a zero-dependency client for agentd (docs/PROTOCOL.md).
//
//   import { Client } from "@agentd/client";
//   const guest = new Client({ url: "http://10.0.2.15:7700", token });
//   const r = await guest.run("pytest -q", { cwd: "/workspace/repo", timeoutSec: 900 });
//   console.log(r.exitCode, r.stdout.toString());
export { Client, mintExecId } from "./client.js";
export type {
  Compression, EditOptions, EditResult, LineEdit, Preconditions, ReadOptions, RunOptions, StreamOptions, TextEdit,
  WriteOptions,
} from "./client.js";
export {
  AgentdError, isRetryable,
  InvalidRequest, InvalidJson, PayloadTooLarge, HeadersTooLarge, RouteNotFound, MethodNotAllowed,
  RequestTimeout, TooManyConnections, ShuttingDown, Unauthorized, NotBootstrapped, AlreadyBootstrapped,
  ExecNotFound, ExecIdConflict, ExecReleased, ExecRunning, TooManyExecs, StdinNotStreamed, StdinOffsetMismatch,
  StdinClosed, UnknownUser, UnknownGroup, NotAPty, NotFound, IsADirectory, NotADirectory, AlreadyExists,
  PermissionDenied, DirectoryNotEmpty, UnsafePath, InvalidRange, RangeNotSatisfiable, InvalidArchive,
  ArchiveTooLarge, InsufficientStorage, RuntimeUnavailable, LimitUnsupported, RestrictedUserUnknown,
  ProfileUnsupported, ContextNotFound, ContextGone, ContextIdConflict, TooManyContexts, ContextBusy,
  RunIdConflict, EgressNameUnresolved, RunLost, PortUnreachable, IoError, InternalError, CrossDevice, TooManyWaits, TooManyWatches,
  Quarantined, Resetting, PreconditionFailed, EditMismatch, TransportError, DeadlineExceeded, ProtocolError, ProtocolMismatch,
  UnknownError,
} from "./errors.js";
export type { ErrorCode, ErrorDetails } from "./errors.js";
export type { ExtractOptions } from "./extract.js";
export type { Forward, ForwardOptions, FsWatchEvent, GuestPort, Tunnel, WatchOptions } from "./reactive.js";
export type { GlobResult, SearchMatch, SearchOptions, SearchResult, SearchSummary, WalkOptions } from "./search.js";
export type { ClientOptions } from "./transport.js";
export { PROTOCOL_MAJOR } from "./version.js";
export type * from "./types.js";
