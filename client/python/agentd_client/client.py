"""Client: the blocking Python face of the agentd protocol (docs/PROTOCOL.md).

Mirrors the C++ client (docs/CLIENT.md): caller-minted exec ids so starts are
retry-safe, idempotent calls retried with jittered backoff, ``stream()``
resuming with ``Last-Event-ID`` so every output byte arrives exactly once,
and confined, staged tree downloads.

Thread-safety: a Client may be shared by threads; each call takes its own
pooled connection. Iterate one ``stream()`` generator from one thread.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from typing import Any, Callable, Dict, Generator, List, Mapping, Optional, Sequence, Union

from ._base import check_id, retryable_stream_failure
from ._events import apply_event, apply_frame
from ._frames import MEDIA_TYPE as FRAMES_MEDIA_TYPE, FrameDecoder
from ._contexts import ContextCalls
from ._files import FileCalls
from ._reactive import ReactiveCalls
from ._sse import SseDecoder
from ._transport import Request, Transport, quote_value
from .errors import AgentdError, DeadlineExceeded, InvalidRequest, ProtocolError, TransportError
from .types import (BootstrapResult, CodeRunResult, Cursors, EgressReport, ExecInfo, ExitEvent,
                    GapEvent, GuestPort, Health, OutputChunk, OutputEvent, OutputMatch, PollResult, ResetReport, RunResult,
                    StreamEvent)

# Frames when the daemon offers them (docs/PROTOCOL.md, "Frames"); an older
# daemon ignores the first type and answers SSE.
FRAMES_ACCEPT = FRAMES_MEDIA_TYPE + ", text/event-stream"
# The daemon sends a keepalive at least every 15 s; a stream silent for much
# longer than that is dead even if the socket does not say so.
STREAM_SILENCE_LIMIT = 45.0
# One long-poll round of wait_exec().
WAIT_ROUND_MS = 30000
# The metrics text is a few kilobytes; a guest cannot make the host hold more.
METRICS_MAX_BYTES = 4 << 20


def mint_exec_id(prefix: str = "x") -> str:
    """A fresh exec id: `prefix` plus time and 64 random bits, so ids from many
    hosts never collide and sort roughly by start time. Persist it before
    starting, so a harness that crashes between start and answer retries it."""
    ms = int(time.time() * 1000)
    return "%s-%011x-%016x" % (prefix[:98], ms, secrets.randbits(64))


def _unready_health(status: int, body: bytes) -> bool:
    """A 503 that carries the daemon's health document (docs/CLIENT.md,
    "Health"): a JSON object naming its protocol, a `status` other than "ok"
    and a `reason`. A proxy's 503 or garbage is not one."""
    if status != 503:
        return False
    try:
        doc = json.loads(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return False
    return (isinstance(doc, dict) and isinstance(doc.get("status"), str)
            and doc["status"] != "ok" and isinstance(doc.get("reason"), str)
            and doc["reason"] != "" and isinstance(doc.get("protocol"), (int, str))
            and not isinstance(doc.get("protocol"), bool))


class Client(FileCalls, ReactiveCalls, ContextCalls):
    """Talks to one agentd. ``url``: ``http://HOST:PORT``, ``unix:/path`` or ``vsock:CID:PORT``."""

    def __init__(self, url: str = "http://127.0.0.1:7700", token: Optional[str] = None, *,
                 connect_timeout: float = 5.0, request_timeout: float = 60.0,
                 max_attempts: int = 6, backoff_initial: float = 0.05, backoff_max: float = 2.0,
                 max_stream_reconnects: int = 20, max_idle_connections: int = 8) -> None:
        self._t = Transport(url, token, connect_timeout=connect_timeout,
                            request_timeout=request_timeout, max_attempts=max_attempts,
                            backoff_initial=backoff_initial, backoff_max=backoff_max,
                            max_idle_connections=max_idle_connections)
        self.max_stream_reconnects = max_stream_reconnects

    # -- lifecycle -----------------------------------------------------------

    @property
    def url(self) -> str:
        return self._t.endpoint.url

    def set_token(self, token: Optional[str]) -> None:
        """Use a re-minted token from now on (calls in flight keep the old one)."""
        self._t.token = token

    def close(self) -> None:
        self._t.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001  (interpreter shutdown)
            pass

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- health and bootstrap ------------------------------------------------

    def health(self) -> Health:
        """GET /v1/health (no token needed). Answers whatever protocol the daemon
        speaks; the client's other calls refuse another protocol major
        (ProtocolMismatch). A daemon that cannot take work answers 503 with
        its health: that is returned at once, not raised, with `status`
        ("draining", "resetting", "quarantined", "state_dir_unwritable"),
        `reason` and `errno`; any other 503 still raises."""
        req = Request("GET", "/v1/health", idempotent=True, answer_if=_unready_health)
        _, _, data = self._t.call(req)
        try:
            doc = json.loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise ProtocolError("the daemon's answer is not JSON: %s" % e) from e
        self._t.note_health(doc)
        return Health.from_json(doc)

    def bootstrap(self, token: str, env: Optional[Mapping[str, str]] = None) -> BootstrapResult:
        """POST /v1/bootstrap; a repeat with the same token replays (retry-safe).
        The client uses `token` for its later calls."""
        body: Dict[str, Any] = {"token": token}
        if env:
            body["env"] = dict(env)
        doc = self._json("POST", "/v1/bootstrap", body, idempotent=True)
        self.set_token(token)
        return BootstrapResult(bool(doc.get("ok")), bool(doc.get("replayed")))

    def reset(self, reset_id: Optional[str] = None, next_token: Optional[str] = None,
              env: Optional[Mapping[str, str]] = None) -> ResetReport:
        """POST /v1/reset: returns the guest to a clean state for the next tenant,
        or quarantines it (report.clean False, report.remaining named). With
        `next_token` (and its launch `env`) the next tenant's token is installed
        in the same step and this client uses it from then on; without it
        bootstrap opens again. Retry-safe: `reset_id` (minted when None) makes
        a retry, even with the retired token, answer the recorded report."""
        rid = reset_id or "reset-" + secrets.token_hex(12)
        body: Dict[str, Any] = {"reset_id": rid}
        if next_token is not None:
            body["next"] = {"token": next_token, "env": dict(env or {})}
        report = ResetReport.from_json(self._json("POST", "/v1/reset", body, idempotent=True))
        if report.clean and next_token is not None:
            self.set_token(next_token)
        return report

    # -- exec ----------------------------------------------------------------

    @staticmethod
    def exec_request(argv: Optional[Sequence[str]] = None, *, command: Optional[str] = None,
                     runtime: Optional[str] = None, code: Optional[str] = None,
                     shell: Optional[str] = None, env: Optional[Mapping[str, Optional[str]]] = None,
                     cwd: Optional[str] = None, user: Optional[str] = None,
                     group: Optional[str] = None, stdin: Union[None, str, bytes] = None,
                     stdin_stream: bool = False, timeout_sec: Optional[int] = None,
                     kill_grace_sec: Optional[int] = None,
                     pty: Optional[Mapping[str, Any]] = None,
                     profile: Optional[str] = None,
                     network: Optional[str] = None,
                     egress: Optional[Mapping[str, Any]] = None,
                     **limits: Union[int, float, bool, str]) -> Dict[str, Any]:
        """The JSON start request (docs/PROTOCOL.md, "Start"): exactly one of argv,
        command, or runtime with code ("Run code": as a detached exec). `limits`
        are the resource limits of "Limits": memory_mb, pids, cpu_sec,
        file_size_mb, output_bytes, kill_on_output, cpus, disk_bytes (a
        scratch tmpfs of that size at disk_path, default /tmp). `profile` is
        "restricted" or "unrestricted" (docs/PROTOCOL.md, "Profiles"); unset,
        the daemon's --default-profile applies. `network="none"`: only loopback
        (docs/PROTOCOL.md, "No network"); unset, the guest's network. `egress`:
        the egress policy, {"mode": "public" | "allow" | "none" | "all",
        "allow": ["CIDR:PORT", "HOST:PORT", ...], "deny": [...], "dns": bool}
        (docs/PROTOCOL.md, "Egress"); unset, the daemon's --default-egress. A
        host name is resolved once when the exec starts (ExecInfo.egress_resolved
        names the addresses); one without an address raises EgressNameUnresolved."""
        body: Dict[str, Any] = {}
        if argv is not None:
            body["argv"] = list(argv)
        if command is not None:
            body["command"] = command
        for name, value in (("runtime", runtime), ("code", code), ("shell", shell), ("cwd", cwd),
                            ("user", user), ("group", group), ("timeout_sec", timeout_sec),
                            ("kill_grace_sec", kill_grace_sec), ("profile", profile),
                            ("network", network)):
            if value is not None:
                body[name] = value
        if egress is not None:
            body["egress"] = dict(egress)
        body.update(_limits(limits))
        if env is not None:
            body["env"] = dict(env)
        if isinstance(stdin, str):
            body["stdin"] = stdin
        elif stdin is not None:
            body["stdin_b64"] = base64.b64encode(bytes(stdin)).decode("ascii")
        if stdin_stream:
            body["stdin_stream"] = True
        if pty is not None:
            body["pty"] = dict(pty)
        return body

    def start_exec(self, exec_id: str, argv: Optional[Sequence[str]] = None, **options: Any) -> ExecInfo:
        """PUT /v1/execs/{id}: starts a detached exec (options as exec_request).

        Retry-safe: the same id and request answer the same exec and never
        start a second process; the same id with another request raises
        ExecIdConflict."""
        body = self.exec_request(argv, **options)
        doc = self._json("PUT", "/v1/execs/" + quote_value(check_id(exec_id)), body,
                         idempotent=True)
        return ExecInfo.from_json(doc)

    def poll_exec(self, exec_id: str, *, stdout_from: Optional[int] = None,
                  stderr_from: Optional[int] = None, max_bytes: Optional[int] = None,
                  wait_ms: int = 0, until_exit: bool = False) -> PollResult:
        """GET /v1/execs/{id}: the exec object and output past the cursors.

        With `wait_ms`, a long poll: answers when there is output past a
        given cursor, the exec exited, or the time is up; with `until_exit`
        new output alone does not end the wait."""
        target = "/v1/execs/" + quote_value(check_id(exec_id)) + _poll_query(
            stdout_from, stderr_from, max_bytes, wait_ms, until_exit)
        doc = self._json("GET", target, idempotent=True, extra_wait=wait_ms / 1000.0)
        return PollResult.from_json(doc)

    def start_exec_and_wait(self, exec_id: str, argv: Optional[Sequence[str]] = None, *,
                            wait_ms: int = WAIT_ROUND_MS, until_exit: bool = True,
                            stdout_from: Optional[int] = 0, stderr_from: Optional[int] = 0,
                            max_bytes: Optional[int] = None, **options: Any) -> PollResult:
        """PUT /v1/execs/{id} with the poll's query (docs/PROTOCOL.md, "Start and
        wait"): starts like start_exec, answers like poll_exec once started. A
        short command's exit and output in one request. Retry-safe like
        start_exec (the query is not part of the start's identity)."""
        body = self.exec_request(argv, **options)
        target = "/v1/execs/" + quote_value(check_id(exec_id)) + _poll_query(
            stdout_from, stderr_from, max_bytes, wait_ms, until_exit)
        doc = self._json("PUT", target, body, idempotent=True, extra_wait=wait_ms / 1000.0)
        return PollResult.from_json(doc)

    def wait_exec(self, exec_id: str, timeout: Optional[float] = None) -> ExecInfo:
        """Long polls until the exec has exited; DeadlineExceeded after `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left_ms = WAIT_ROUND_MS if deadline is None else int(
                max(0.0, deadline - time.monotonic()) * 1000)
            info = self.poll_exec(exec_id, wait_ms=min(left_ms, WAIT_ROUND_MS)).exec
            if not info.running:
                return info
            if deadline is not None and time.monotonic() >= deadline:
                raise DeadlineExceeded("exec %s still running after %.1f s" % (exec_id, timeout or 0.0),
                                       details={"id": exec_id})

    def wait_for_output(self, exec_id: str, pattern: str, *, stream: str = "stdout",
                        cursor: int = 0, timeout: Optional[float] = None) -> OutputMatch:
        """Waits until the regular expression `pattern` (PCRE2) matches the
        exec's `stream` from byte `cursor` on (docs/PROTOCOL.md, "Wait for
        output"); the daemon wakes the moment it matches, even across
        output chunks. Answers the match, or (matched False) why not:
        "exited" (the exec ended without one) or "timeout" after `timeout`
        seconds (None: wait for as long as it takes). Read-only."""
        deadline = None if timeout is None else time.monotonic() + timeout
        target = "/v1/execs/" + quote_value(check_id(exec_id))
        while True:
            left_ms = WAIT_ROUND_MS if deadline is None else int(
                max(0.0, deadline - time.monotonic()) * 1000)
            wait_ms = min(left_ms, WAIT_ROUND_MS)
            query = "?until=match&pattern=%s&stream=%s&cursor=%d&wait_ms=%d" % (
                quote_value(pattern), quote_value(stream), cursor, wait_ms)
            doc = self._json("GET", target + query, idempotent=True,
                             extra_wait=wait_ms / 1000.0)
            m = OutputMatch.from_json(doc)
            if m.matched or m.reason == "exited":
                return m
            # A round's timeout or a scan bound: resume where the daemon
            # says nothing is lost.
            cursor = m.next
            if m.reason == "timeout" and deadline is not None and time.monotonic() >= deadline:
                return m

    def _wait_rounds(self, target: str, done: Callable[[Any], bool],
                     timeout: Optional[float]) -> Any:
        """Repeats a condition wait (`target` + wait_ms) in rounds until
        `done(answer)` or `timeout` seconds (None: no limit); the last answer."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left_ms = WAIT_ROUND_MS if deadline is None else int(
                max(0.0, deadline - time.monotonic()) * 1000)
            wait_ms = min(left_ms, WAIT_ROUND_MS)
            doc = self._json("GET", target + "&wait_ms=%d" % wait_ms, idempotent=True,
                             extra_wait=wait_ms / 1000.0)
            if done(doc) or (deadline is not None and time.monotonic() >= deadline):
                return doc

    def wait_for_port(self, port: int, timeout: Optional[float] = None) -> bool:
        """Waits until TCP `port` is listening in the guest (docs/PROTOCOL.md,
        "Wait for a port"); False when `timeout` seconds passed first."""
        doc = self._wait_rounds("/v1/ports?wait_for=%d" % port,
                                lambda d: bool(d.get("listening")), timeout)
        return bool(doc.get("listening"))

    def list_ports(self) -> List[GuestPort]:
        """GET /v1/ports: the TCP ports listening in the guest."""
        doc = self._json("GET", "/v1/ports", idempotent=True)
        ports = doc.get("ports") if isinstance(doc, dict) else None
        if not isinstance(ports, list):
            raise ProtocolError('the port list is not {"ports": [...]}')
        return [GuestPort.from_json(p) for p in ports]

    def metrics(self, max_bytes: int = METRICS_MAX_BYTES) -> str:
        """GET /v1/metrics: the daemon's Prometheus text exposition (at most
        `max_bytes`; a longer answer raises ProtocolError)."""
        req = Request("GET", "/v1/metrics", idempotent=True)
        _, _, body = self._t.call(req, max_body=max_bytes)
        return body.decode("utf-8", "replace")

    def wait_for_path(self, path: str, *, gone: bool = False,
                      timeout: Optional[float] = None) -> bool:
        """Waits until `path` exists (or, with `gone`, no longer exists),
        confined like every fs call (docs/PROTOCOL.md, "Wait for a path");
        False when `timeout` seconds passed first."""
        target = "/v1/fs/stat?path=%s&until=%s" % (quote_value(path), "gone" if gone else "exists")
        doc = self._wait_rounds(target, lambda d: bool(d.get("met")), timeout)
        return bool(doc.get("met"))

    def kill_exec(self, exec_id: str, signal: Optional[str] = None,
             grace_sec: Optional[int] = None) -> ExecInfo:
        """POST /v1/execs/{id}/kill: signals the whole process group (idempotent)."""
        body: Dict[str, Any] = {}
        if signal is not None:
            body["signal"] = signal
        if grace_sec is not None:
            body["grace_sec"] = grace_sec
        return ExecInfo.from_json(self._json(
            "POST", "/v1/execs/%s/kill" % quote_value(check_id(exec_id)), body, idempotent=True))

    def ack_exec(self, exec_id: str) -> ExecInfo:
        """POST /v1/execs/{id}/ack: marks an exited exec read (idempotent)."""
        return ExecInfo.from_json(self._json(
            "POST", "/v1/execs/%s/ack" % quote_value(check_id(exec_id)), {}, idempotent=True))

    def exec_egress(self, exec_id: str) -> EgressReport:
        """GET /v1/execs/{id}/egress: every connect and UDP send of the exec and
        its descendants, by destination and verdict (docs/PROTOCOL.md, "Egress")."""
        return EgressReport.from_json(self._json(
            "GET", "/v1/execs/%s/egress" % quote_value(check_id(exec_id)), idempotent=True))

    def list_execs(self) -> List[ExecInfo]:
        """GET /v1/execs: every record, in start order."""
        doc = self._json("GET", "/v1/execs", idempotent=True)
        return [ExecInfo.from_json(e) for e in doc.get("execs") or []]

    def write_stdin(self, exec_id: str, offset: int, data: Union[bytes, str],
                    eof: bool = False) -> int:
        """POST /v1/execs/{id}/stdin: bytes at stdin `offset`; answers the daemon's next offset.

        Retry-safe: bytes the daemon already took are skipped. Resend from
        the answer when it is short of offset + len(data)."""
        raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        target = "/v1/execs/%s/stdin?offset=%d%s" % (quote_value(check_id(exec_id)), offset,
                                                      "&eof=1" if eof else "")
        req = Request("POST", target, body=raw, idempotent=True,
                      headers={"Content-Type": "application/octet-stream"})
        _, _, body = self._t.call(req)
        doc = json.loads(body.decode("utf-8"))
        return int(doc["next"])

    def resize_exec(self, exec_id: str, rows: int, cols: int) -> ExecInfo:
        """POST /v1/execs/{id}/resize (PTY execs)."""
        return ExecInfo.from_json(self._json(
            "POST", "/v1/execs/%s/resize" % quote_value(check_id(exec_id)),
            {"rows": rows, "cols": cols}, idempotent=True))

    def read_output(self, exec_id: str, stream: str = "stdout", start: int = 0) -> OutputChunk:
        """GET /v1/execs/{id}/stdout|stderr (no follow): the retained bytes from `start`.

        `chunk.start` > `start` means bytes before it are no longer retained."""
        if stream not in ("stdout", "stderr"):
            raise InvalidRequest('stream must be "stdout" or "stderr"', details={"field": "stream"})
        req = Request("GET", "/v1/execs/%s/%s?from=%d" % (quote_value(check_id(exec_id)),
                                                          stream, start), idempotent=True)
        _, headers, body = self._t.call(req, max_body=1 << 40)
        first = int(headers.get("agentd-from", start))
        nxt = int(headers.get("agentd-next", first + len(body)))
        return OutputChunk(first, nxt, body, (start, first) if first > start else None)

    def stream(self, exec_id: str, cursors: Cursors = Cursors(), *,
               on_reconnect: Optional[Callable[[int, AgentdError], None]] = None
               ) -> Generator[StreamEvent, None, None]:
        """GET /v1/execs/{id}/events as an iterator of events, from `cursors` on.

        Yields OutputEvent (stdout/stderr bytes, each byte exactly once and in
        order), GapEvent (bytes the daemon no longer retains) and finally one
        ExitEvent. Every event carries the cursors to persist for a reattach.
        On a lost or silent connection it reconnects with Last-Event-ID after
        a jittered backoff; ``max_stream_reconnects`` bounds reconnects in a
        row that deliver nothing."""
        check_id(exec_id)
        out_next, err_next = int(cursors[0]), int(cursors[1])
        quiet = 0
        attempt = 0
        while True:
            req = Request("GET", "/v1/execs/%s/events" % quote_value(exec_id), idempotent=True,
                          headers={"Accept": FRAMES_ACCEPT,
                                   "Last-Event-ID": "%d:%d" % (out_next, err_next)})
            delivered = False
            failure: AgentdError
            try:
                resp = self._t.open(req)
            except AgentdError as e:
                if not retryable_stream_failure(e):
                    raise
                failure = e
            else:
                resp.set_timeout(STREAM_SILENCE_LIMIT)
                frames = resp.headers.get("content-type", "").startswith(FRAMES_MEDIA_TYPE)
                decoder: Union[FrameDecoder, SseDecoder] = \
                    FrameDecoder() if frames else SseDecoder()
                apply: Callable[[Any, int, int], Any] = apply_frame if frames else apply_event
                try:
                    while True:
                        try:
                            chunk = resp.read_chunk(1 << 20)
                        except (TransportError, DeadlineExceeded) as e:
                            failure = e
                            break
                        if not chunk:
                            failure = TransportError("event stream ended before the exit event")
                            break
                        for ev in decoder.feed(chunk):
                            out = apply(ev, out_next, err_next)
                            if out is None:
                                continue
                            event, out_next, err_next = out
                            delivered = True
                            if event is not None:
                                yield event
                                if isinstance(event, ExitEvent):
                                    return
                finally:
                    resp.close()  # the daemon ends the stream after exit; never reuse
            quiet = 0 if delivered else quiet + 1
            if quiet > self.max_stream_reconnects:
                failure.details.setdefault("reconnects", quiet - 1)
                raise failure
            attempt += 1
            if on_reconnect is not None:
                on_reconnect(attempt, failure)
            time.sleep(self._t.backoff(max(quiet, 1)))

    def run(self, command: Union[str, Sequence[str]], *, id: Optional[str] = None,
            max_stdout_bytes: int = 64 << 20, max_stderr_bytes: int = 64 << 20, ack: bool = True,
            **options: Any) -> RunResult:
        """Start, stream to the end, ack: the whole outcome of one command.

        `command` is a shell command line (str) or an argv (a sequence).
        Output beyond max_*_bytes is counted, not kept (``*_truncated``)."""
        exec_id = id or mint_exec_id("run")
        if isinstance(command, str):
            options["command"] = command
            argv = None
        else:
            argv = list(command)
        out, err = bytearray(), bytearray()
        trunc = {"stdout": False, "stderr": False}

        def keep(kind: str, data: bytes) -> None:
            buf, limit = (out, max_stdout_bytes) if kind == "stdout" else (err, max_stderr_bytes)
            room = max(0, limit - len(buf))
            if len(data) > room:
                trunc[kind] = True
            buf += data[:room]

        # Start and wait (docs/PROTOCOL.md, "Start and wait"), as the C++ and
        # TypeScript clients do: a short command's exit and whole output in
        # this one request; what it leaves (a longer run, or more output than
        # one answer carries) the event stream delivers from the cursors reached.
        first = self.start_exec_and_wait(exec_id, argv, **options)
        cursors = {"stdout": 0, "stderr": 0}
        for kind, chunk in (("stdout", first.stdout), ("stderr", first.stderr)):
            if chunk is None:
                continue
            if chunk.gap is not None:
                trunc[kind] = True
            keep(kind, chunk.data)
            cursors[kind] = chunk.next
        e = first.exec
        final: Optional[ExecInfo] = None
        if not e.running and cursors["stdout"] >= e.stdout_bytes and \
                cursors["stderr"] >= e.stderr_bytes:
            final = e
        else:
            for ev in self.stream(exec_id, Cursors(cursors["stdout"], cursors["stderr"])):
                if isinstance(ev, OutputEvent):
                    keep(ev.kind, ev.data)
                elif isinstance(ev, GapEvent):
                    trunc[ev.stream] = True
                else:
                    final = ev.exec
        if final is None:
            raise TransportError("the stream of %s ended without an exit event" % exec_id,
                                 details={"id": exec_id})
        if ack:
            final = self.ack_exec(exec_id)
        ec = final.exit_code
        return RunResult(exec_id, ec if ec is not None else -1, final.signal, final.timed_out,
                         final.killed_by, final.duration_ms, bytes(out), bytes(err),
                         trunc["stdout"], trunc["stderr"], final)

    def run_code(self, runtime: str, code: str, *, timeout_sec: Optional[int] = None,
                 cwd: Optional[str] = None, env: Optional[Mapping[str, Optional[str]]] = None,
                 user: Optional[str] = None, group: Optional[str] = None,
                 stdin: Optional[str] = None, scan_changes: Optional[bool] = None,
                 profile: Optional[str] = None,
                 network: Optional[str] = None,
                 egress: Optional[Mapping[str, Any]] = None,
                 result_marker: Optional[str] = None,
                 artifacts_dir: Optional[str] = None,
                 **limits: Union[int, float, bool, str]) -> CodeRunResult:
        """POST /v1/run: one code action (shell, python, ts) to completion: a
        one-line summary, bounded output and the files it changed under cwd.

        `limits`, `profile`, `network` and `egress` as for exec_request. `result_marker` (daemon default
        "__AGENTD_RESULT__"; "" turns it off): a stdout line starting with it is the
        JSON result (`result`, `result_error`). `artifacts_dir` (relative to cwd):
        files the run creates or modifies there are answered as `artifacts` (path,
        media type, bytes, sha256; never their content). Not retried once sent
        (running code twice is not harmless)."""
        body: Dict[str, Any] = {"runtime": runtime, "code": code}
        for name, value in (("timeout_sec", timeout_sec), ("cwd", cwd), ("user", user),
                            ("group", group), ("stdin", stdin), ("scan_changes", scan_changes),
                            ("profile", profile), ("network", network),
                            ("result_marker", result_marker), ("artifacts_dir", artifacts_dir)):
            if value is not None:
                body[name] = value
        if env is not None:
            body["env"] = dict(env)
        if egress is not None:
            body["egress"] = dict(egress)
        body.update(_limits(limits))
        return CodeRunResult.from_json(self._json("POST", "/v1/run", body, idempotent=False))



def _poll_query(stdout_from: Optional[int], stderr_from: Optional[int],
                max_bytes: Optional[int], wait_ms: int, until_exit: bool) -> str:
    """The poll's query (docs/PROTOCOL.md, "Poll"), "" when it has none."""
    query = []
    for name, value in (("stdout_from", stdout_from), ("stderr_from", stderr_from),
                        ("max_bytes", max_bytes)):
        if value is not None:
            query.append("%s=%d" % (name, value))
    if wait_ms > 0:
        query.append("wait_ms=%d" % wait_ms)
    if until_exit:
        query.append("until=exit")
    return "?" + "&".join(query) if query else ""


LIMITS = ("memory_mb", "pids", "cpu_sec", "file_size_mb", "output_bytes", "kill_on_output",
          "cpus", "disk_bytes", "disk_path")


def _limits(limits: Mapping[str, Union[int, float, bool, str]]
            ) -> Dict[str, Union[int, float, bool, str]]:
    unknown = sorted(set(limits) - set(LIMITS))
    if unknown:
        raise InvalidRequest("unknown option %r (limits are %s)" % (unknown[0], ", ".join(LIMITS)),
                             details={"field": unknown[0]})
    return {k: v for k, v in limits.items() if v is not None}
