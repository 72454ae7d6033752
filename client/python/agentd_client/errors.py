"""Typed exceptions: one class per stable error code of docs/PROTOCOL.md.

Every failure of a client call raises an AgentdError (or a subclass). It
carries the daemon's stable ``code`` (``"exec_id_conflict"``), the HTTP
``status`` (0 when no answer came back), the daemon's one-sentence
``message`` and its ``details`` (the real numbers: sizes, limits, the
offending field, path or archive member). Three codes never appear on the
wire: ``transport_error`` (no answer: refused, reset, closed mid-answer),
``deadline_exceeded`` (a client deadline passed) and ``protocol_error`` (an
answer that is not this protocol; ``details["http_status"]`` says what came
back).

Catch by class (``except ExecIdConflict``) or by code
(``except AgentdError as e: if e.code == "not_found"``).
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type


class AgentdError(Exception):
    """A failed call: the daemon's error answer, or a client-side failure."""

    code: str = "internal"

    def __init__(self, message: str, *, code: Optional[str] = None, status: int = 0,
                 details: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.status = status
        self.message = message
        self.details: Dict[str, Any] = dict(details or {})

    def __str__(self) -> str:
        where = " (HTTP %d)" % self.status if self.status else ""
        return "%s%s: %s" % (self.code, where, self.message)

    def __repr__(self) -> str:
        return "%s(code=%r, status=%r, message=%r, details=%r)" % (
            type(self).__name__, self.code, self.status, self.message, self.details)


# -- failures without a daemon answer --------------------------------------

class TransportError(AgentdError):
    """No answer: the connection was refused, reset or closed mid-answer."""
    code = "transport_error"


class DeadlineExceeded(AgentdError):
    """A client deadline passed (a connect, a request, or a wait)."""
    code = "deadline_exceeded"


class ProtocolError(AgentdError):
    """The answer was not this protocol."""
    code = "protocol_error"


class ProtocolMismatch(AgentdError):
    """The daemon speaks another protocol major than this client (``details``:
    ``daemon_protocol``, ``client_protocol``, ``daemon_version``)."""
    code = "protocol_mismatch"


# -- the daemon's stable codes (docs/PROTOCOL.md, "Errors") ----------------

class InvalidRequest(AgentdError):
    code = "invalid_request"


class InvalidJson(AgentdError):
    code = "invalid_json"


class PayloadTooLarge(AgentdError):
    code = "payload_too_large"


class HeadersTooLarge(AgentdError):
    code = "headers_too_large"


class RouteNotFound(AgentdError):
    code = "route_not_found"


class MethodNotAllowed(AgentdError):
    code = "method_not_allowed"


class RequestTimeout(AgentdError):
    code = "request_timeout"


class TooManyConnections(AgentdError):
    code = "too_many_connections"


class ShuttingDown(AgentdError):
    code = "shutting_down"


class Unauthorized(AgentdError):
    code = "unauthorized"


class NotBootstrapped(AgentdError):
    code = "not_bootstrapped"


class AlreadyBootstrapped(AgentdError):
    code = "already_bootstrapped"


class ExecNotFound(AgentdError):
    code = "exec_not_found"


class ExecIdConflict(AgentdError):
    code = "exec_id_conflict"


class ExecReleased(AgentdError):
    code = "exec_released"


class ExecRunning(AgentdError):
    code = "exec_running"


class TooManyExecs(AgentdError):
    code = "too_many_execs"


class StdinNotStreamed(AgentdError):
    code = "stdin_not_streamed"


class StdinOffsetMismatch(AgentdError):
    code = "stdin_offset_mismatch"


class StdinClosed(AgentdError):
    code = "stdin_closed"


class UnknownUser(AgentdError):
    code = "unknown_user"


class UnknownGroup(AgentdError):
    code = "unknown_group"


class NotAPty(AgentdError):
    code = "not_a_pty"


class NotFound(AgentdError):
    code = "not_found"


class IsADirectory(AgentdError):
    code = "is_directory"


class NotADirectory(AgentdError):
    code = "not_a_directory"


class AlreadyExists(AgentdError):
    code = "already_exists"


class PermissionDenied(AgentdError):
    code = "permission_denied"


class DirectoryNotEmpty(AgentdError):
    code = "directory_not_empty"


class UnsafePath(AgentdError):
    code = "unsafe_path"


class InvalidRange(AgentdError):
    code = "invalid_range"


class RangeNotSatisfiable(AgentdError):
    code = "range_not_satisfiable"


class InvalidArchive(AgentdError):
    code = "invalid_archive"


class ArchiveTooLarge(AgentdError):
    code = "archive_too_large"


class InsufficientStorage(AgentdError):
    code = "insufficient_storage"


class RuntimeUnavailable(AgentdError):
    code = "runtime_unavailable"


class LimitUnsupported(AgentdError):
    code = "limit_unsupported"


class PortUnreachable(AgentdError):
    code = "port_unreachable"


class IoError(AgentdError):
    code = "io_error"


class InternalError(AgentdError):
    code = "internal"


class CrossDevice(AgentdError):
    code = "cross_device"


class TooManyWatches(AgentdError):
    code = "too_many_watches"


class Quarantined(AgentdError):
    """A reset could not prove the guest clean; only a restart serves again."""
    code = "quarantined"


class Resetting(AgentdError):
    code = "resetting"


class TooManyWaits(AgentdError):
    code = "too_many_waits"


class PreconditionFailed(AgentdError):
    """If-Match / If-None-Match did not hold; ``details["etag"]`` is the current tag
    (None when the file does not exist: ``details["exists"]``)."""
    code = "precondition_failed"


class EditMismatch(AgentdError):
    """An edit's ``old`` text was not found exactly ``count`` times; ``details`` name
    the edit (``edit``), the ``found`` count and their ``lines``."""
    code = "edit_mismatch"


class RestrictedUserUnknown(AgentdError):
    """A restricted exec's --restricted-user is not in the guest's /etc/passwd."""
    code = "restricted_user_unknown"


class ProfileUnsupported(AgentdError):
    """The guest's kernel cannot load the restricted profile's seccomp filter."""
    code = "profile_unsupported"


class ContextNotFound(AgentdError):
    """No context with this id (deleted, never created, or forgotten by a guest reset)."""
    code = "context_not_found"


class ContextGone(AgentdError):
    """The context's interpreter ended; ``details`` say why (``ended_reason``) and
    name the limit that killed it (``killed_by``, ``limit``). Reset it or create another."""
    code = "context_gone"


class ContextIdConflict(AgentdError):
    """A context with this id exists with a different create request."""
    code = "context_id_conflict"


class TooManyContexts(AgentdError):
    """The daemon holds ``details["limit"]`` live contexts (--max-contexts)."""
    code = "too_many_contexts"


class ContextBusy(AgentdError):
    """``details["limit"]`` runs already wait in this context."""
    code = "context_busy"


class RunLost(AgentdError):
    """The daemon crashed while this run_id's run was in progress (or after it
    answered, its answer kept only in memory): the context survived, the answer
    is lost. ``details["ran"]`` says whether the interpreter ran the cell
    (``details["exit_code"]`` when it finished it)."""
    code = "run_lost"


class RunIdConflict(AgentdError):
    """This run_id was used for other code in this context."""
    code = "run_id_conflict"


class EgressNameUnresolved(AgentdError):
    """A host name of an egress rule had no address when the exec started
    (``details["name"]``, ``details["reason"]``); nothing ran."""
    code = "egress_name_unresolved"


class UnknownError(AgentdError):
    """A code this client does not know (a newer daemon's); ``code`` is the code
    as sent. Judge it by ``status`` (docs/PROTOCOL.md, "Compatibility")."""
    code = "unknown"


ERROR_CLASSES: Dict[str, Type[AgentdError]] = {
    cls.code: cls for cls in (
        TransportError, DeadlineExceeded, ProtocolError, ProtocolMismatch, InvalidRequest,
        InvalidJson, PayloadTooLarge, HeadersTooLarge, RouteNotFound, MethodNotAllowed, RequestTimeout,
        TooManyConnections, ShuttingDown, Unauthorized, NotBootstrapped, AlreadyBootstrapped,
        ExecNotFound, ExecIdConflict, ExecReleased, ExecRunning, TooManyExecs,
        StdinNotStreamed, StdinOffsetMismatch, StdinClosed, UnknownUser, UnknownGroup,
        NotAPty, NotFound, IsADirectory, NotADirectory, AlreadyExists, PermissionDenied,
        DirectoryNotEmpty, UnsafePath, InvalidRange, RangeNotSatisfiable, InvalidArchive,
        ArchiveTooLarge, InsufficientStorage, RuntimeUnavailable, LimitUnsupported, PortUnreachable, IoError,
        InternalError, CrossDevice, TooManyWatches, Quarantined, Resetting,
        TooManyWaits, PreconditionFailed, EditMismatch, RestrictedUserUnknown,
        ProfileUnsupported, ContextNotFound, ContextGone, ContextIdConflict, TooManyContexts,
        ContextBusy, RunIdConflict, EgressNameUnresolved, RunLost)
}


def error_for(code: str, message: str, status: int = 0,
              details: Optional[Dict[str, Any]] = None) -> AgentdError:
    """The exception for `code` (docs/CLIENT.md, "Error classes"); a code this
    client does not know (a newer daemon's) is UnknownError carrying it."""
    cls = ERROR_CLASSES.get(code)
    if cls is None:
        return UnknownError(message, code=code, status=status, details=details)
    return cls(message, status=status, details=details)


def error_from_body(status: int, body: bytes) -> AgentdError:
    """Decodes a non-2xx answer: {"error": {"code", "message", ...details}}."""
    import json
    try:
        doc = json.loads(body.decode("utf-8")) if body else None
    except (ValueError, UnicodeDecodeError):
        doc = None
    err = doc.get("error") if isinstance(doc, dict) else None
    if not isinstance(err, dict) or not isinstance(err.get("code"), str):
        return ProtocolError("HTTP %d without an agentd error body" % status, status=status,
                             details={"http_status": status})
    details = {k: v for k, v in err.items() if k not in ("code", "message")}
    message = err.get("message") if isinstance(err.get("message"), str) else err["code"]
    return error_for(err["code"], message, status, details)


# Failures after which a stream reconnects, an upload is rebuilt, a download restarts.
RETRYABLE_FOR_STREAMS = (TransportError, DeadlineExceeded)
